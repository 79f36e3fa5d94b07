package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// WaitForOutcome bounds how long Submit waits for the host's answer.
var WaitForOutcome = 10 * time.Minute

// ErrNoAnswer is returned when the host did not answer in time.
var ErrNoAnswer = errors.New("the host did not answer")

// Submit writes a into the outbox at dir (in the box: $ROSTER_OUTBOX) and
// waits for the host's outcome.
func Submit(ctx context.Context, dir string, a *Action) (*Outcome, error) {
	data, err := Encode(a)
	if err != nil {
		return nil, err
	}
	if o := over(dir, 0); o != nil {
		return o, nil // the run's actions are refused from now on
	}
	n, err := post(dir, data)
	if err != nil {
		return nil, err
	}
	return await(ctx, dir, n)
}

// over is the host's done/over.json (the run reached MaxActions), as the
// outcome of action n; nil while there is none.
func over(dir string, n int) *Outcome {
	data, err := os.ReadFile(filepath.Join(dir, "done", OverName))
	if err != nil {
		return nil
	}
	var o Outcome
	if json.Unmarshal(data, &o) != nil || o.Ok() {
		o = *overOutcome()
	}
	o.N = n
	return &o
}

// post claims the next free N (free in tmp/, new/ and done/) and moves the
// action into new/N.json.
func post(dir string, data []byte) (int, error) {
	tmp := filepath.Join(dir, "tmp")
	start := 1
	if ents, err := os.ReadDir(filepath.Join(dir, "done")); err == nil {
		start = len(ents) + 1 // a hint only: claims decide
	}
	for n := start; n < start+MaxActions*2; n++ {
		name := strconv.Itoa(n)
		if taken(dir, name) {
			continue
		}
		fd, err := unix.Open(filepath.Join(tmp, name+".claim"), unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err == unix.EEXIST {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("outbox %s: claim %d: %w", dir, n, err)
		}
		unix.Close(fd)
		if taken(dir, name) {
			continue // written straight into new/ meanwhile, without a claim
		}
		src := filepath.Join(tmp, name+".json")
		if err := writeSync(src, data); err != nil {
			return 0, fmt.Errorf("outbox %s: %w", dir, err)
		}
		err = unix.Renameat2(unix.AT_FDCWD, src, unix.AT_FDCWD, filepath.Join(dir, "new", name+".json"), unix.RENAME_NOREPLACE)
		if err == unix.EEXIST {
			os.Remove(src)
			continue // someone skipped the claim: never replace an earlier action
		}
		if err != nil {
			return 0, fmt.Errorf("outbox %s: post %d: %w", dir, n, err)
		}
		return n, nil
	}
	return 0, fmt.Errorf("outbox %s: no free action number", dir)
}

// taken reports whether N is in use without a claim: an entry in new/, or
// an answer in done/ (to an entry written straight into new/). Such an N
// is never posted: the host would refuse it, and done/N.json is not its
// answer.
func taken(dir, name string) bool {
	for _, p := range []string{filepath.Join(dir, "new", name+".json"), filepath.Join(dir, "done", name+".json")} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			return true
		}
	}
	return false
}

func writeSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// await polls done/N.json.
func await(ctx context.Context, dir string, n int) (*Outcome, error) {
	path := filepath.Join(dir, "done", strconv.Itoa(n)+".json")
	deadline := time.Now().Add(WaitForOutcome)
	pause := 5 * time.Millisecond
	for {
		data, err := os.ReadFile(path)
		if err == nil {
			var o Outcome
			if err := json.Unmarshal(data, &o); err != nil {
				return nil, fmt.Errorf("%s: %v", path, err)
			}
			return &o, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		// The host answers what it took before it writes over.json, so
		// N.json missing after over.json appeared means N was not taken.
		if o := over(dir, n); o != nil {
			if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
				return o, nil
			}
			continue
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("action %d: %w within %s", n, ErrNoAnswer, WaitForOutcome)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pause):
		}
		if pause < 100*time.Millisecond {
			pause *= 2
		}
	}
}
