package tms

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
	"github.com/roster-sh/roster/lib/snap"
)

// ForgottenText replaces a forgotten conversation's words in the journal.
const ForgottenText = "[forgotten]"

// ReasonForgotten is the reason of the cancel lines a forget writes.
const ReasonForgotten = "forgotten"

// ForgetCounts is what a forget removed; the `forgotten` line carries it.
type ForgetCounts struct {
	ID        string `json:"id"`        // the forget (its intent record's id)
	Tasks     int    `json:"tasks"`     // tasks canceled
	Lines     int    `json:"lines"`     // journal lines whose words were replaced
	Runs      int    `json:"runs"`      // run folders deleted
	Snapshots int    `json:"snapshots"` // snapshots that lost the channel's subtree
	Entries   int    `json:"entries"`   // manifest entries removed from them
	Store     bool   `json:"store"`     // the live channel store was deleted
	// Conversation: the conversation record (log and outbox, lib/chat)
	// was deleted.
	Conversation bool `json:"conversation,omitempty"`
}

// intent is tasks/forget.json: the durable record that a forget of
// Channel has begun, with what its steps removed so far. It is written
// before the first step and removed after the last, so any forget that
// finds it finishes the job first (docs/store.md).
type intent struct {
	Format    int          `json:"format"`
	Channel   string       `json:"channel"`
	StartedAt time.Time    `json:"started_at"`
	Counts    ForgetCounts `json:"counts"`
}

// ForgetOptions tune Forget.
type ForgetOptions struct {
	DryRun bool
	Snap   snap.Options // the store lock's wait
}

// ForgetReport is what Forget did (or, dry, would do).
type ForgetReport struct {
	Channel string
	Counts  ForgetCounts
	Resumed string // a killed forget of another channel this one finished first
	DryRun  bool
}

func (p *Partition) intentPath() string { return filepath.Join(p.W.Tasks(), "forget.json") }

func (p *Partition) readIntent() (*intent, error) {
	data, err := os.ReadFile(p.intentPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var in intent
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, refused(p.intentPath(), "%v", err)
	}
	if in.Format != Format {
		return nil, refused(p.intentPath(), "unknown format %d", in.Format)
	}
	if _, err := home.EncodeChannel(in.Channel); err != nil {
		return nil, refused(p.intentPath(), "%v", err)
	}
	return &in, nil
}

func (p *Partition) writeIntent(in *intent) error {
	in.Format = Format
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	if err := p.ensureDirs(); err != nil {
		return err
	}
	return fsx.WriteFile(p.intentPath(), append(b, '\n'), 0o600)
}

// Forget removes a conversation for good (docs/store.md, "Forgetting a
// conversation"): the worker's tasks of channel are canceled, its channel
// store and the subtree in every snapshot deleted, the runs that served it
// deleted, and every journal line about it keeps its seq, event and ids
// but loses its words; one `forgotten` line closes it. A box of the worker
// serving channel refuses it (exit 13); a channel the worker never had is
// exit 12. Each step can run again, and tasks/forget.json records that
// the job has begun: a forget killed at any instant is finished by the
// next one.
func (p *Partition) Forget(ctx context.Context, channel string, o ForgetOptions) (*ForgetReport, error) {
	enc, err := home.EncodeChannel(channel)
	if err != nil {
		return nil, err
	}
	rep := &ForgetReport{Channel: channel, DryRun: o.DryRun}
	in, err := p.readIntent()
	if err != nil {
		return nil, err
	}
	if in != nil && in.Channel != channel && !o.DryRun {
		// A killed forget of another channel: finish it first.
		if err := p.checkBoxes(in.Channel); err != nil {
			return nil, err
		}
		if _, err := p.forgetSteps(ctx, in, o); err != nil {
			return nil, err
		}
		rep.Resumed = in.Channel
		in = nil
	}
	if in != nil && in.Channel != channel {
		in = nil
	}
	if o.DryRun {
		c, had, err := p.forgetPlan(ctx, channel, enc, o)
		if err != nil {
			return nil, err
		}
		if !had && in == nil {
			return nil, notFound("worker %s never had channel %q", p.Name, channel)
		}
		rep.Counts = c
		return rep, nil
	}
	if in == nil {
		_, had, err := p.forgetPlan(ctx, channel, enc, o)
		if err != nil {
			return nil, err
		}
		if !had {
			return nil, notFound("worker %s never had channel %q", p.Name, channel)
		}
	}
	if err := p.checkBoxes(channel); err != nil {
		return nil, err
	}
	if in == nil {
		now := p.clock.Now().UTC()
		in = &intent{Channel: channel, StartedAt: now, Counts: ForgetCounts{ID: home.NewRunID(now)}}
		if err := p.writeIntent(in); err != nil {
			return nil, err
		}
	}
	c, err := p.forgetSteps(ctx, in, o)
	if err != nil {
		return nil, err
	}
	rep.Counts = c
	return rep, nil
}

// checkBoxes refuses (exit 13) while a box of the worker serving channel
// is live, or may be (a box.json that cannot be read).
func (p *Partition) checkBoxes(channel string) error {
	live, err := runs.LiveBoxesStrict(p.W)
	if err != nil {
		return err
	}
	var f *File
	for _, b := range live {
		ch := ""
		if r, err := runs.ReadRecord(p.W.Run(b.Run)); err == nil {
			ch = r.Channel
		} else if b.Task != "" {
			if f == nil {
				if f, err = readFile(p.W.TasksFile()); err != nil {
					return err
				}
			}
			if t := f.Task(b.Task); t != nil {
				ch = t.Channel
			}
		}
		if ch == channel {
			return errs.WithHint(conflict("a box of %s serving channel %q is live (run %s)", p.Name, channel, b.Run),
				"let it end (or `roster-box kill "+b.Run+"`), then forget again")
		}
	}
	return nil
}

// forgetSteps runs the steps of in's forget in order, recording the
// counts after each, and removes the intent record at the end.
func (p *Partition) forgetSteps(ctx context.Context, in *intent, o ForgetOptions) (ForgetCounts, error) {
	enc, _ := home.EncodeChannel(in.Channel)
	save := func() error { return p.writeIntent(in) }
	// 1. Cancel the channel's tasks, so no new box serves it.
	n, err := p.forgetCancel(ctx, in.Channel)
	if err != nil {
		return in.Counts, err
	}
	in.Counts.Tasks += n
	if err := save(); err != nil {
		return in.Counts, err
	}
	// 2. The channel store and its subtree in every snapshot.
	sr, err := snap.ForgetChannel(ctx, p.W, enc, false, o.Snap)
	if err != nil {
		return in.Counts, err
	}
	in.Counts.Store = in.Counts.Store || sr.Store
	in.Counts.Snapshots += sr.Snapshots
	in.Counts.Entries += sr.Entries
	if err := save(); err != nil {
		return in.Counts, err
	}
	// 2b. The conversation record: its log, outbox and pairing approvals.
	gone, err := removeConversation(p.W, in.Channel)
	if err != nil {
		return in.Counts, err
	}
	in.Counts.Conversation = in.Counts.Conversation || gone
	if err := save(); err != nil {
		return in.Counts, err
	}
	// 3. The runs that served it; other runs' change lists lose its lines.
	nr, err := p.forgetRuns(in.Channel, enc)
	if err != nil {
		return in.Counts, err
	}
	in.Counts.Runs += nr
	if err := save(); err != nil {
		return in.Counts, err
	}
	// 4. The journal, tasks.json and the view; the `forgotten` line.
	if _, err := p.forgetScrub(ctx, in); err != nil {
		return in.Counts, err
	}
	// 5. Done.
	if err := os.Remove(p.intentPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return in.Counts, err
	}
	return in.Counts, fsx.SyncDir(p.W.Tasks())
}

// forgetPlan counts what a forget of channel would remove, and whether the
// worker ever had it (a task, template or journal record of it, its
// channel store, a snapshot's subtree or a run).
func (p *Partition) forgetPlan(ctx context.Context, channel, enc string, o ForgetOptions) (ForgetCounts, bool, error) {
	var c ForgetCounts
	f, err := readFile(p.W.TasksFile())
	if err != nil {
		return c, false, err
	}
	had := false
	for i := range f.Tasks {
		if f.Tasks[i].Channel == channel {
			c.Tasks++
			had = true
		}
	}
	for i := range f.Templates {
		had = had || f.Templates[i].Channel == channel
	}
	data, err := os.ReadFile(p.W.Journal())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return c, false, err
	}
	lines, err := decodeAll(p.W.Journal(), data)
	if err != nil {
		return c, false, err
	}
	ids, runIDs := channelTasks(lines, channel)
	had = had || len(ids) > 0
	for _, l := range lines {
		if aboutChannel(l.line, ids, runIDs) && scrubLine(l.line, ids) {
			c.Lines++
		}
	}
	sr, err := snap.ForgetChannel(ctx, p.W, enc, true, o.Snap)
	if err != nil && !errors.Is(err, errs.ErrNotFound) {
		return c, false, err
	}
	if sr != nil {
		c.Store, c.Snapshots, c.Entries = sr.Store, sr.Snapshots, sr.Entries
		had = had || sr.Store || sr.Snapshots > 0
	}
	if dir, err := p.W.Conversation(channel); err == nil {
		if _, err := os.Lstat(dir); err == nil {
			c.Conversation, had = true, true
		}
	}
	served, err := runs.Served(p.W, channel, runIDs)
	if err != nil {
		return c, false, err
	}
	c.Runs = len(served)
	had = had || c.Runs > 0
	return c, had, nil
}

// forgetCancel cancels the worker's tasks of channel under the partition
// lock: pending and needing review, and claimed ones whose box is gone; a
// claimed one whose box may be live refuses (exit 13) and changes nothing.
func (p *Partition) forgetCancel(ctx context.Context, channel string) (int, error) {
	t, err := p.begin(ctx)
	if err != nil {
		return 0, err
	}
	defer t.end()
	n, err := t.cancelChannel(channel)
	if err != nil || n == 0 {
		return n, err
	}
	return n, t.commit()
}

func (t *txn) cancelChannel(channel string) (int, error) {
	var ids []string
	for i := range t.f.Tasks {
		task := &t.f.Tasks[i]
		if task.Channel != channel {
			continue
		}
		if task.State == Claimed && task.Claim != nil {
			if gone, _ := t.p.boxGone(task.Claim, t.now); !gone {
				return 0, errs.WithHint(conflict("task %s of channel %q is claimed by run %s, whose box may be live", task.ID, channel, task.Claim.Run),
					"let it end (or `roster-box kill "+task.Claim.Run+"`), then forget again")
			}
		}
		ids = append(ids, task.ID)
	}
	for _, id := range ids {
		run := ""
		if task := t.f.Task(id); task.Claim != nil {
			run = task.Claim.Run
		}
		if _, err := t.finish(id, Canceled, EvCanceled, run, ByOwner, ReasonForgotten, nil); err != nil {
			return 0, err
		}
	}
	return len(ids), nil
}

// forgetRuns deletes the run folders that served channel (none may be
// live: the caller checked, and a live one is refused again here) and
// drops the channel store's lines from every other run's change list.
func (p *Partition) forgetRuns(channel, enc string) (int, error) {
	runs.RemoveTrash(p.W)
	data, err := os.ReadFile(p.W.Journal())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	lines, err := decodeAll(p.W.Journal(), data)
	if err != nil {
		return 0, err
	}
	_, runIDs := channelTasks(lines, channel)
	served, err := runs.Served(p.W, channel, runIDs)
	if err != nil {
		return 0, err
	}
	for _, id := range served {
		if b, err := runs.ReadBoxInfo(p.W.Run(id)); err == nil && b.Alive() {
			return 0, errs.WithHint(conflict("run %s of channel %q is live", id, channel), "let it end, then forget again")
		}
		if err := runs.RemoveRun(p.W, id); err != nil {
			return 0, err
		}
	}
	ids, err := runs.IDs(p.W)
	if err != nil {
		return len(served), err
	}
	tree := home.SnapChannelStoresDir + "/" + enc
	for _, id := range ids {
		path := home.StoreChanges(p.W.Run(id))
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		if out := snap.DropTreeLines(data, tree); len(out) != len(data) {
			if err := fsx.WriteFile(path, out, 0o644); err != nil {
				return len(served), err
			}
		}
	}
	return len(served), nil
}

// removeConversation deletes the channel's conversation record
// (data/workers/W/conversations/CHAN/, docs/channels.md) and makes the
// removal durable; it reports whether there was one.
func removeConversation(w home.Worker, channel string) (bool, error) {
	dir, err := w.Conversation(channel)
	if err != nil {
		return false, err
	}
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return false, fmt.Errorf("remove the conversation record: %w", err)
	}
	return true, fsx.SyncDir(w.Conversations())
}
