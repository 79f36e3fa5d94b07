package tms

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"sort"
	"time"
)

// Finished returns the tasks that left the partition (completed, failed,
// canceled), as they finished, oldest first. It reads the whole journal.
func (p *Partition) Finished() ([]Task, error) {
	m, err := finishedTasks(p.W.Journal())
	if err != nil {
		return nil, err
	}
	out := make([]Task, 0, len(m))
	for _, t := range m {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].FinishedAt, out[j].FinishedAt
		if a != nil && b != nil && !a.Equal(*b) {
			return a.Before(*b)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// Attempt is one way a run of a task ended, or its requeue: a line of its
// history (roster-task show lists them).
type Attempt struct {
	Seq    int64     `json:"seq"`
	At     time.Time `json:"at"`
	Event  string    `json:"event"` // completed, failed, canceled, needs-review, reclaimed, requeued, retrying
	Run    string    `json:"run,omitempty"`
	By     string    `json:"by,omitempty"`
	Reason string    `json:"reason,omitempty"`
}

// Attempts lists task id's history from the journal, oldest first: each
// end of a run (completed, failed, canceled, needs-review, reclaimed) and
// each requeue, so a task requeued under its id shows every attempt. It
// reads the history index and only those lines (history.go).
func (p *Partition) Attempts(id string) ([]Attempt, error) {
	h, err := p.history()
	if err != nil {
		return nil, err
	}
	return h.attempts(id)
}

// notLive ends t (releasing the lock) and returns the error for a change
// to task id, which is not in tasks.json: a conflict (13) naming its state
// when the history has it finished (docs/tools.md: a state change the
// current state forbids), else not found (12).
func (t *txn) notLive(id, change string) error {
	t.end()
	p := t.p
	h, err := p.history()
	if err != nil {
		return err
	}
	if st := h.state(id); st != "" {
		return conflict("task %s is %s (finished): too late to %s", id, st, change)
	}
	return notFound("task %s: not pending, claimed or in review in worker %s", id, p.Name)
}

// FollowPoll is how often Follow looks for new lines.
const FollowPoll = 100 * time.Millisecond

// Follow calls fn for every complete journal line with seq > since, then
// for each line appended later, until ctx ends (tail -f semantics; resume
// after a restart with the last seq seen). A torn tail is waited out, never
// passed on. It returns ctx's error, or fn's.
func (p *Partition) Follow(ctx context.Context, since int64, fn func(Line) error) error {
	path := p.W.Journal()
	var off int64
	for {
		f, err := os.Open(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return refused(path, "cannot read: %v", err)
		}
		if f != nil {
			if fi, err := f.Stat(); err == nil && fi.Size() < off {
				off = 0 // replaced or truncated below what we read: start over, seq filters
			}
			data, err := io.ReadAll(io.NewSectionReader(f, off, 1<<62))
			f.Close()
			if err != nil {
				return err
			}
			end := bytes.LastIndexByte(data, '\n')
			if end >= 0 {
				for _, raw := range bytes.Split(data[:end], []byte("\n")) {
					if len(raw) == 0 {
						continue
					}
					l, err := DecodeLine(raw)
					if err != nil {
						return refused(path, "at byte %d: %v", off, err)
					}
					if l.Seq > since {
						if err := fn(*l); err != nil {
							return err
						}
						since = l.Seq
					}
				}
				off += int64(end + 1)
			}
		}
		t := time.NewTimer(FollowPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
