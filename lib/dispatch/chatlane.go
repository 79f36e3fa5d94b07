package dispatch

import (
	"context"

	"github.com/roster-sh/roster/lib/chat"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/tms"
)

// The chat lane (docs/channels.md, "Dispatch"): relays are claimed before
// batch work, up to [dispatch] chat_cap, beside cap and the workers'
// concurrency; a live channel's relays go to its running session.

// claimChat claims relays, one per worker in turn, up to avail (chat_cap
// less the relays live), never counted against cap or a worker's
// concurrency.
func (d *Dispatcher) claimChat(ctx context.Context, ready []*workerState, avail int) []Start {
	var out []Start
	for progress := true; progress && avail > 0; {
		progress = false
		for _, ws := range ready {
			if avail <= 0 || len(ws.chatDue) == 0 || d.beingSwept(ws.name) {
				continue
			}
			task := ws.chatDue[0]
			ws.chatDue = ws.chatDue[1:]
			run := home.NewRunID(d.clock.Now())
			if !d.startsSession(ws, task, run) {
				continue // its channel's live session claims it
			}
			s, ok := d.claimOne(ctx, ws, task, run)
			if !ok {
				d.unmarkSession(ws, task, run)
			}
			if ok {
				ws.chatLive++
				d.chatLive++
				avail--
				progress = true
				out = append(out, s)
			}
		}
	}
	return out
}

// startsSession tells whether relay task is claimed by the dispatcher:
// yes unless its channel is live (docs/channels.md) and a live session of
// it runs, which claims the channel's relays itself. A relay that starts
// a session has the conversation marked (live.json) with its run first.
func (d *Dispatcher) startsSession(ws *workerState, task tms.Task, run string) bool {
	ch := ws.spec.ChannelFor(task.Channel)
	if ch == nil || ch.Live == 0 {
		return true
	}
	rec, err := chat.Open(d.h.Worker(ws.name), task.Channel)
	if err != nil {
		return true
	}
	m, err := rec.Live()
	if err != nil {
		d.log.Warn("live session mark unreadable: replaced", "worker", ws.name, "channel", task.Channel, "err", err)
	}
	if m != nil {
		if gone, _ := tms.BoxGone(d.h.Worker(ws.name).Run(m.Run), m.Started, d.clock.Now()); !gone {
			return false
		}
	}
	if err := rec.SetLive(run, d.clock.Now()); err != nil {
		d.log.Error("live session not marked: the relay waits", "worker", ws.name, "channel", task.Channel, "err", err)
		return false
	}
	return true
}

// unmarkSession takes back the mark startsSession made for run when the
// claim did not happen.
func (d *Dispatcher) unmarkSession(ws *workerState, task tms.Task, run string) {
	if rec, err := chat.Open(d.h.Worker(ws.name), task.Channel); err == nil {
		_ = rec.ClearLive(run)
	}
}
