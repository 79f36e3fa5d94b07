package dispatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
)

// Lock takes data/dispatch.lock without waiting and writes the caller's
// pid into it in place (truncate and write on the locked descriptor; the
// file is never replaced, or a second dispatcher could lock a new inode).
// A lock held by another dispatcher is errs.ErrBusy naming its pid.
func Lock(h home.Home) (*fsx.Lock, error) {
	lk, err := fsx.LockPath(context.Background(), h.DispatchLock(), false, 0)
	if errors.Is(err, errs.ErrBusy) {
		who := "another process"
		if pid := HolderPID(h); pid > 0 {
			who = "pid " + strconv.Itoa(pid)
		}
		return nil, errs.WithHint(
			errs.New(errs.ErrBusy, fmt.Sprintf("a dispatcher already runs on %s (%s holds %s)", h.Dir, who, h.DispatchLock())),
			"one dispatcher per home: stop that one first, or leave it running")
	}
	if err != nil {
		return nil, err
	}
	f := lk.File()
	pid := []byte(strconv.Itoa(os.Getpid()) + "\n")
	if err = f.Truncate(0); err == nil {
		if _, err = f.WriteAt(pid, 0); err == nil {
			err = f.Sync()
		}
	}
	if err != nil {
		lk.Unlock()
		return nil, fmt.Errorf("write pid into %s: %w", h.DispatchLock(), err)
	}
	return lk, nil
}

// HolderPID reads the pid the running dispatcher wrote into its lock file
// (0 if none can be read).
func HolderPID(h home.Home) int {
	f, err := os.Open(h.DispatchLock())
	if err != nil {
		return 0
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 64))
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}
