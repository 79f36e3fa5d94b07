package snap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
)

// A store that cannot be snapshotted at all (docs/store.md, "A store that
// cannot be snapshotted") holds its worker rather than failing every run:
// a take that fails writes store-snapshots/.take-failed, which the hold
// (tms.StoreHold) reads, and the next take that succeeds, unchanged
// included, removes it. Failures that are not the store's own leave it
// alone: a busy store lock, a canceled take, low disk (a hold of its own).

// Failure is what store-snapshots/.take-failed records.
type Failure struct {
	Since time.Time `json:"since"` // the first failed take since the last that succeeded
	At    time.Time `json:"at"`    // the last failed take
	Error string    `json:"error"` // its error, one line
}

// lowDisk marks checkFree's refusal (the low-disk hold already says it);
// it adds nothing to the message.
var lowDisk error = lowDiskMark{}

type lowDiskMark struct{}

func (lowDiskMark) Error() string { return "" }

// holdsFor tells whether a take's err means the store cannot be
// snapshotted (as opposed to a busy lock, a cancel, low disk).
func holdsFor(err error) bool {
	return err != nil && !errors.Is(err, errs.ErrBusy) && !errors.Is(err, context.Canceled) &&
		!errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, lowDisk)
}

// noteTake records the outcome of a take under the held lock: a failure
// that holds writes .take-failed (keeping the first failure's time), a
// success removes it. Writing the record is best effort: the take's own
// error is what its caller reports.
func (s *session) noteTake(err error, now time.Time) {
	if err == nil {
		if unix.Unlinkat(s.snaps, home.SnapFailed, 0) == nil {
			unix.Fsync(s.snaps)
		}
		return
	}
	if !holdsFor(err) {
		return
	}
	f := Failure{Since: now.UTC(), At: now.UTC(), Error: strings.Join(strings.Fields(err.Error()), " ")}
	if old, rerr := s.failure(); rerr == nil && old != nil {
		f.Since = old.Since
	}
	data, _ := json.Marshal(f)
	replaceAt(s.snaps, home.SnapFailed, append(data, '\n'))
}

// failure reads .take-failed: nil when there is none.
func (s *session) failure() (*Failure, error) {
	if s.snaps < 0 {
		return nil, nil
	}
	data, err := readFileAt(s.snaps, home.SnapFailed)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var f Failure
	if err := json.Unmarshal(data, &f); err != nil || f.Error == "" {
		return nil, fmt.Errorf("%s/%s: not a take failure record", home.SnapshotsDir, home.SnapFailed)
	}
	return &f, nil
}

// Failed is why worker w's last take failed, nil when it succeeded (or
// none failed since): the reason its worker is held. It takes no lock.
// A record that cannot be read counts as a failure: the hold must not
// lift on what it cannot read.
func Failed(ctx context.Context, w home.Worker) (*Failure, error) {
	s, err := open(ctx, w, noLock)
	if err != nil {
		return nil, err
	}
	defer s.close()
	f, err := s.failure()
	if err != nil {
		return &Failure{Error: err.Error()}, nil
	}
	return f, nil
}

// NoteKilled records a take that died before it could record its own end
// (killed by a signal: the kernel's OOM killer at its worker's host_memory
// bound, a kill -9) as a failure that holds its worker, as a take records
// one it lives to report: why is the record's error. It takes the store
// lock the dead take held (waiting at most wait, as Options.Wait).
func NoteKilled(ctx context.Context, w home.Worker, why string, now time.Time, wait time.Duration) error {
	s, err := open(ctx, w, wait)
	if err != nil {
		return err
	}
	defer s.close()
	s.noteTake(errors.New(why), now)
	return nil
}
