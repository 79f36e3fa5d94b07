package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
)

// LiveMark names the live session serving a conversation: live.json in
// its record, written by the dispatcher when it claims the relay that
// starts the session (before the box starts), removed by the session's
// supervisor when it ends. While it names a run whose box is alive, the
// dispatcher leaves the channel's relays to that session, which claims
// them itself; a mark naming a dead run is stale and replaced.
type LiveMark struct {
	Run     string    `json:"run"`
	Started time.Time `json:"started"`
}

func (r *Record) liveFile() string { return filepath.Join(r.Dir, "live.json") }

// Live reads the mark; nil when there is none.
func (r *Record) Live() (*LiveMark, error) {
	data, err := os.ReadFile(r.liveFile())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m LiveMark
	if err := json.Unmarshal(data, &m); err != nil || m.Run == "" {
		return nil, errs.New(errs.ErrRefused, fmt.Sprintf("%s is unreadable", r.liveFile()))
	}
	return &m, nil
}

// SetLive marks run as the conversation's live session.
func (r *Record) SetLive(run string, at time.Time) error {
	if err := r.ensure(); err != nil {
		return err
	}
	data, _ := json.Marshal(LiveMark{Run: run, Started: at.UTC()})
	return fsx.WriteFile(r.liveFile(), data, 0o644)
}

// ClearLive removes the mark if it names run.
func (r *Record) ClearLive(run string) error {
	m, err := r.Live()
	if err != nil || m == nil || m.Run != run {
		return err
	}
	if err := os.Remove(r.liveFile()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return fsx.SyncDir(r.Dir)
}

// Recent is the conversation's last messages for a new live session's
// briefing: at most n messages and max bytes of their text, oldest first
// (context and dropped lines left out).
func (r *Record) Recent(n, max int) ([]*Message, error) {
	lines, err := r.Read(0)
	if err != nil {
		return nil, err
	}
	var keep []*Message
	for _, m := range Fold(lines) {
		if m.State == Dropped || m.Text == "" {
			continue
		}
		keep = append(keep, m)
	}
	if len(keep) > n {
		keep = keep[len(keep)-n:]
	}
	total := 0
	for i := len(keep) - 1; i >= 0; i-- {
		total += len(keep[i].Text)
		if total > max {
			return keep[i+1:], nil
		}
	}
	return keep, nil
}
