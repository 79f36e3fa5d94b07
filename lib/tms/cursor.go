package tms

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"

	"github.com/roster-sh/roster/lib/fsx"
)

// Cursor is where in a partition's journal a look at the partition stood:
// just after the line with seq Seq, which ends at byte Off. The dispatcher
// keeps the one of its last look at each worker, so that a change it is
// told of can be judged by the lines appended since (ClaimsChanged),
// linear in what the worker wrote, instead of by reading its tasks.json
// again. The zero Cursor is unknown.
type Cursor struct {
	seq, off int64
	ok       bool
}

// cursorAt is the cursor after line seq, ending at byte size; size < 0
// (the journal did not end on a line) is an unknown cursor.
func cursorAt(seq, size int64) Cursor {
	if size < 0 {
		return Cursor{}
	}
	return Cursor{seq: seq, off: size, ok: true}
}

// Known reports whether c says where a look stood.
func (c Cursor) Known() bool { return c.ok }

// Claims lists the partition's claimed tasks (as LiveClaims counts them),
// and where in the journal the look stood.
func (p *Partition) Claims(ctx context.Context) ([]string, Cursor, error) {
	f, at, err := p.readNoLockAt(ctx)
	if err != nil {
		return nil, Cursor{}, err
	}
	var ids []string
	for i := range f.Tasks {
		if f.Tasks[i].State == Claimed {
			ids = append(ids, f.Tasks[i].ID)
		}
	}
	return ids, at, nil
}

// ClaimsChanged tells whether the journal's lines after at may have changed
// which of the partition's tasks are claimed, given claimed, the ids a look
// at at found claimed: a line with a record that claims a task, or ends,
// requeues or removes a claimed one, or a template's record (its next
// activation may have moved). Lines that only file or edit pending tasks,
// journal an action or add a gate to a claimed task change nothing of that.
// It takes no lock and reads only the lines appended since at (each
// decoded once), never tasks.json: one worker filing large tasks costs
// the caller what that worker wrote, not its whole partition. Anything it
// cannot tell (an unknown cursor, a journal rewritten or cut since, an
// unreadable line) is changed: the caller then looks at the partition as
// ever, which refuses or repairs what needs it. next is where the lines
// read end (a torn or half-appended last line is left for later).
func (p *Partition) ClaimsChanged(at Cursor, claimed []string) (next Cursor, changed bool) {
	if !at.ok {
		return at, true
	}
	f, err := os.Open(p.W.Journal())
	if errors.Is(err, fs.ErrNotExist) && at.off == 0 {
		return at, false
	}
	if err != nil {
		return at, true
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() < at.off || (at.off > 0 && !cursorHolds(f, fi.Size(), at.seq, at.off)) {
		return at, true
	}
	data := make([]byte, fi.Size()-at.off)
	if _, err := f.ReadAt(data, at.off); err != nil && err != io.EOF {
		return at, true
	}
	data = data[:bytes.LastIndexByte(data, '\n')+1] // complete lines only
	live := make(map[string]bool, len(claimed))
	for _, id := range claimed {
		live[id] = true
	}
	next = at
	for _, raw := range fsx.SplitLines(data) {
		l, err := DecodeLine(raw)
		if err != nil {
			return at, true
		}
		for _, r := range l.Records {
			if r.Template != nil {
				return at, true
			}
			if r.Task == nil {
				continue
			}
			now := !r.Removed && r.Task.State == Claimed
			if live[r.Task.ID] != now || (r.Task.Kind == KindRelay && !r.Removed && r.Task.State == Pending) {
				// a claim that began or ended, or a relay filed: relays
				// have a lane of their own, open at any concurrency
				return at, true
			}
		}
		next.seq = l.Seq
	}
	next.off += int64(len(data))
	return next, false
}
