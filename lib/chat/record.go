package chat

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
)

// The states of a record's lines (docs/channels.md).
const (
	Received = "received" // in: logged, not yet filed
	Filed    = "filed"    // in: its relay task filed (Task)
	Answered = "answered" // in: a run answered it (Run)
	Context  = "context"  // in: a room message that did not mention the worker
	Dropped  = "dropped"  // in: a sender outside allow (text not kept)
	Queued   = "queued"   // out: in the outbox, not yet sent
	Sent     = "sent"     // out: sent (NetID)
	Resent   = "resent"   // out: sent again after a crash: possibly twice
	Failed   = "failed"   // out: not delivered within a day
)

// Line is one line of log.jsonl. A message's first line carries its text
// and identity; later lines about it name it by Of (its first line's seq)
// and carry only what changed (state, task, run, net_id).
type Line struct {
	Seq      int64     `json:"seq"`
	At       time.Time `json:"at"`
	Dir      string    `json:"dir"` // "in" | "out"
	Of       int64     `json:"of,omitempty"`
	From     string    `json:"from,omitempty"`
	Verified bool      `json:"verified,omitempty"`
	Standing string    `json:"standing,omitempty"`
	Text     string    `json:"text,omitempty"`
	NetID    string    `json:"net_id,omitempty"`
	Task     string    `json:"task,omitempty"`
	Run      string    `json:"run,omitempty"`
	Ref      string    `json:"ref,omitempty"` // out: the outbox entry
	By       string    `json:"by,omitempty"`  // out: "run", "operator", "pairing", "notice"
	State    string    `json:"state"`
	Note     string    `json:"note,omitempty"`
}

// MaxLine bounds one line of the log as read (a message is cut at MaxText
// before it is logged; JSON escaping can make its line up to six times
// longer).
const MaxLine = 8 << 20

// Record is one conversation's record: data/workers/W/conversations/CHAN.
type Record struct {
	Worker  string
	Channel string
	Dir     string
}

// Open names the record of channel for worker w; nothing is created.
func Open(w home.Worker, channel string) (*Record, error) {
	dir, err := w.Conversation(channel)
	if err != nil {
		return nil, err
	}
	return &Record{Worker: w.Name, Channel: channel, Dir: dir}, nil
}

// LogFile is log.jsonl's path; OutboxDir the outbox's.
func (r *Record) LogFile() string   { return filepath.Join(r.Dir, "log.jsonl") }
func (r *Record) OutboxDir() string { return filepath.Join(r.Dir, "outbox") }
func (r *Record) lockFile() string  { return filepath.Join(r.Dir, ".lock") }

// ensure makes the record's folders (conversations/CHAN/outbox/{tmp,new,cur}).
func (r *Record) ensure() error {
	if err := fsx.MkdirDurable(filepath.Dir(r.Dir), 0o700); err != nil {
		return err
	}
	for _, d := range []string{r.Dir, r.OutboxDir(), filepath.Join(r.OutboxDir(), "tmp"), filepath.Join(r.OutboxDir(), "new"), filepath.Join(r.OutboxDir(), "cur")} {
		if err := fsx.MkdirDurable(d, 0o700); err != nil {
			return err
		}
	}
	return nil
}

// lock takes the record's lock (flock), creating the record if needed.
func (r *Record) lock(ctx context.Context) (*fsx.Lock, error) {
	if err := r.ensure(); err != nil {
		return nil, errs.New(errs.ErrRefused, fmt.Sprintf("conversation %s of %s: %v", r.Channel, r.Worker, err))
	}
	return fsx.LockPath(ctx, r.lockFile(), false, 30*time.Second)
}

// Append writes lines to the log under its lock, giving each the next
// seq (and At, if zero), fsynced before it returns; it returns them as
// written. A torn last line left by a crash is cut first.
func (r *Record) Append(ctx context.Context, lines ...Line) ([]Line, error) {
	l, err := r.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer l.Unlock()
	return r.appendLocked(lines)
}

func (r *Record) appendLocked(lines []Line) ([]Line, error) {
	f, err := os.OpenFile(r.LogFile(), os.O_RDWR|os.O_APPEND|os.O_CREATE|unix.O_NOFOLLOW, logMode)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := fsx.RepairTail(f); err != nil {
		return nil, err
	}
	seq := int64(0)
	last, err := fsx.LastLine(f)
	if err != nil {
		return nil, err
	}
	if last != nil {
		var l Line
		if err := json.Unmarshal(last, &l); err != nil || l.Seq < 1 {
			return nil, errs.New(errs.ErrRefused, fmt.Sprintf("%s: its last line is unreadable; not appending to it (roster-chat log %s %s shows what is there)", r.LogFile(), r.Worker, r.Channel))
		}
		seq = l.Seq
	}
	var buf bytes.Buffer
	now := time.Now().UTC()
	for i := range lines {
		seq++
		lines[i].Seq = seq
		if lines[i].At.IsZero() {
			lines[i].At = now
		}
		b, err := json.Marshal(lines[i])
		if err != nil {
			return nil, err
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		return nil, err
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	return lines, nil
}

// logMode lets the box user read the log through its read-only mount
// (the record's folder is root's, 0700: no one else reaches it here).
const logMode = 0o644

// LogForBox is the log of w's record of channel, made (empty) if missing,
// for a run serving the channel to mount read-only.
func LogForBox(w home.Worker, channel string) (string, error) {
	r, err := Open(w, channel)
	if err != nil {
		return "", err
	}
	if err := r.ensure(); err != nil {
		return "", err
	}
	f, err := os.OpenFile(r.LogFile(), os.O_RDONLY|os.O_CREATE|unix.O_NOFOLLOW, logMode)
	if err != nil {
		return "", err
	}
	return r.LogFile(), f.Close()
}

// Read returns the log's complete lines with seq > since, in order; a
// torn last line is ignored; a line that cannot be read is an error
// naming it. A record never written reads as empty.
func (r *Record) Read(since int64) ([]Line, error) {
	f, err := os.Open(r.LogFile())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Line
	_, err = scanLines(f, func(l Line) {
		if l.Seq > since {
			out = append(out, l)
		}
	})
	if err != nil {
		return out, fmt.Errorf("%s: %w", r.LogFile(), err)
	}
	return out, nil
}

// scanLines calls fn for each complete line of rd and returns the bytes
// read up to the end of the last complete line.
func scanLines(rd io.Reader, fn func(Line)) (int64, error) {
	br := bufio.NewReaderSize(rd, 64<<10)
	var off int64
	n := 0
	for {
		b, err := br.ReadSlice('\n')
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(b) > MaxLine {
				return off, fmt.Errorf("line %d is longer than %d bytes", n+1, MaxLine)
			}
			var more []byte
			more, err = br.ReadSlice('\n')
			b = append(append([]byte(nil), b...), more...)
		}
		if err == io.EOF {
			return off, nil // a torn tail (no "\n") is ignored
		}
		if err != nil {
			return off, err
		}
		n++
		off += int64(len(b))
		var l Line
		if e := json.Unmarshal(b, &l); e != nil || l.Seq < 1 {
			return off, fmt.Errorf("line %d is not a record line", n)
		}
		fn(l)
	}
}

// Message is a message's folded view: its first line with the later
// lines' changes applied.
type Message struct {
	Line
	Updates []Line `json:"-"`
}

// Fold folds lines into messages, in the order they were first logged:
// an inbound message's later lines name it by Of (its first line's seq),
// an outbound one's by Ref (its outbox entry). A line that names no
// earlier one is kept as its own.
func Fold(lines []Line) []*Message {
	var out []*Message
	by := map[int64]*Message{}
	refs := map[string]*Message{}
	for _, l := range lines {
		m := by[l.Of]
		if l.Of == 0 {
			m = nil
		}
		if l.Dir == "out" && l.Ref != "" && l.Of == 0 {
			m = refs[l.Ref]
		}
		if m != nil {
			m.Updates = append(m.Updates, l)
			m.State = l.State
			if l.Task != "" {
				m.Task = l.Task
			}
			if l.Run != "" {
				m.Run = l.Run
			}
			if l.NetID != "" {
				m.NetID = l.NetID
			}
			if l.Note != "" {
				m.Note = l.Note
			}
			continue
		}
		m = &Message{Line: l}
		by[l.Seq] = m
		if l.Dir == "out" && l.Ref != "" {
			refs[l.Ref] = m
		}
		out = append(out, m)
	}
	return out
}
