package chat

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
)

// Reply limits (docs/channels.md, "Replies").
const (
	MaxReply        = 16 << 10       // bytes of one reply
	MaxRepliesOfRun = 60             // replies one run may send
	DeliverFor      = 24 * time.Hour // a reply not delivered by then is failed
)

// Reply is one outbox entry: outbox/new/REF (never tried) or
// outbox/cur/REF (tried at least once).
type Reply struct {
	Ref      string    `json:"ref"`
	Chat     string    `json:"chat"` // where it goes: the channel's chat
	Text     string    `json:"text"`
	Run      string    `json:"run,omitempty"`
	By       string    `json:"by"` // "run", "operator", "pairing", "notice"
	Queued   time.Time `json:"queued"`
	Attempts int       `json:"attempts,omitempty"`
	Next     time.Time `json:"next,omitempty"`  // not before
	Error    string    `json:"error,omitempty"` // the last attempt's
	// Sending is set just before an attempt and cleared when it failed:
	// an entry found with it set after a crash may have reached the
	// network, so its delivery is logged "resent".
	Sending bool `json:"sending,omitempty"`
	// Uncertain: an attempt before a crash may have reached the network
	// (it was found Sending); kept through later failed attempts, so its
	// delivery is still logged resent.
	Uncertain bool `json:"uncertain,omitempty"`

	tried bool // read from cur/
}

// NewRef makes an outbox entry's name: time-ordered, unique.
func NewRef(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102T150405.000000000Z") + "-" + hex.EncodeToString(b[:])
}

func validRef(ref string) bool {
	return ref != "" && len(ref) < 100 && !strings.ContainsAny(ref, "/\x00") && ref[0] != '.'
}

// Queue puts a reply in the outbox and logs it queued, both fsynced,
// before anything is sent (roster-chat sends it). The text is refused
// over MaxReply; an empty one is refused too.
func (r *Record) Queue(ctx context.Context, rp Reply) (Reply, Line, error) {
	if strings.TrimSpace(rp.Text) == "" {
		return rp, Line{}, errs.New(errs.ErrUsage, "reply: the text is empty")
	}
	if len(rp.Text) > MaxReply {
		return rp, Line{}, errs.New(errs.ErrUsage, fmt.Sprintf("reply: %d bytes is over the limit of %d (16 KiB): say it shorter, or in several replies", len(rp.Text), MaxReply))
	}
	now := time.Now().UTC()
	if rp.Ref == "" {
		rp.Ref = NewRef(now)
	}
	if rp.Queued.IsZero() {
		rp.Queued = now
	}
	if rp.Chat == "" {
		_, rp.Chat, _ = strings.Cut(r.Channel, ":")
	}
	l, err := r.lock(ctx)
	if err != nil {
		return rp, Line{}, err
	}
	defer l.Unlock()
	if err := r.writeEntry("new", rp); err != nil {
		return rp, Line{}, err
	}
	lines, err := r.appendLocked([]Line{{Dir: "out", Text: rp.Text, Run: rp.Run, Ref: rp.Ref, By: rp.By, State: Queued}})
	if err != nil {
		return rp, Line{}, err
	}
	return rp, lines[0], nil
}

// writeEntry writes rp durably as outbox/SUB/REF (tmp, then rename).
func (r *Record) writeEntry(sub string, rp Reply) error {
	data, err := json.Marshal(rp)
	if err != nil {
		return err
	}
	return fsx.WriteFile(filepath.Join(r.OutboxDir(), sub, rp.Ref), data, 0o600)
}

// Pending lists the outbox's entries, oldest first. An entry that cannot
// be read is skipped and named in the error (it is left where it is).
func (r *Record) Pending() ([]Reply, error) {
	var out []Reply
	var bad []string
	for _, sub := range []string{"cur", "new"} {
		dir := filepath.Join(r.OutboxDir(), sub)
		ents, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			if !e.Type().IsRegular() || !validRef(e.Name()) {
				continue
			}
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			var rp Reply
			if err == nil {
				err = json.Unmarshal(data, &rp)
			}
			if err != nil || rp.Ref != e.Name() {
				bad = append(bad, filepath.Join(sub, e.Name()))
				continue
			}
			rp.tried = sub == "cur"
			out = append(out, rp)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Ref < out[j].Ref })
	if len(bad) > 0 {
		return out, errs.New(errs.ErrRefused, fmt.Sprintf("%s: unreadable outbox entries left in place: %s", r.OutboxDir(), strings.Join(bad, ", ")))
	}
	return out, nil
}

// MaybeSent tells whether an attempt of rp may have reached the network
// before a crash: its delivery is then logged resent.
func (rp Reply) MaybeSent() bool { return rp.Sending || rp.Uncertain }

// Attempt marks rp as being sent (outbox/cur/REF with Sending set,
// fsynced) just before the adapter sends it.
func (r *Record) Attempt(rp *Reply) error {
	rp.Uncertain = rp.Uncertain || rp.Sending // found mid-attempt: a crash
	rp.Sending = true
	rp.Attempts++
	if err := r.writeEntry("cur", *rp); err != nil {
		return err
	}
	if !rp.tried {
		rp.tried = true
		if err := os.Remove(filepath.Join(r.OutboxDir(), "new", rp.Ref)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// AttemptFailed records a failed attempt (not sent) and when to try again.
func (r *Record) AttemptFailed(rp *Reply, why error, next time.Time) error {
	rp.Sending = false
	rp.Error = why.Error()
	rp.Next = next.UTC()
	return r.writeEntry("cur", *rp)
}

// Delivered logs rp sent (resent when an earlier attempt may have reached
// the network) with its network id, then removes its entry.
func (r *Record) Delivered(ctx context.Context, rp Reply, netID string, resent bool) error {
	state := Sent
	if resent {
		state = Resent
	}
	if _, err := r.Append(ctx, Line{Dir: "out", Ref: rp.Ref, Run: rp.Run, NetID: netID, State: state}); err != nil {
		return err
	}
	return r.removeEntry(rp)
}

// GiveUp logs rp failed (why) and removes its entry; the text stays in the
// log's queued line.
func (r *Record) GiveUp(ctx context.Context, rp Reply, why string) error {
	if _, err := r.Append(ctx, Line{Dir: "out", Ref: rp.Ref, Run: rp.Run, State: Failed, Note: why}); err != nil {
		return err
	}
	return r.removeEntry(rp)
}

func (r *Record) removeEntry(rp Reply) error {
	for _, sub := range []string{"cur", "new"} {
		if err := os.Remove(filepath.Join(r.OutboxDir(), sub, rp.Ref)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return fsx.SyncDir(filepath.Join(r.OutboxDir(), "cur"))
}

// Backoff is the wait before the n-th retry of a reply (n from 1): 2 s
// doubling, at most 10 minutes.
func Backoff(n int) time.Duration {
	d := 2 * time.Second
	for i := 1; i < n && d < 10*time.Minute; i++ {
		d *= 2
	}
	return min(d, 10*time.Minute)
}
