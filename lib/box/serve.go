package box

import (
	"context"
	"fmt"
	"time"
)

// serve runs the box to its end: it answers actions, and kills the box at
// its ceiling, when idle too long, or when ctx ends. It returns how the
// run ended ("" = by itself), a note, and pid 1's exit.
func (s *Supervision) serve(ctx context.Context, r *supervised, b *Box) (ended, note string, exit Exit) {
	done := make(chan struct{})
	var werr error
	go func() { exit, werr = b.Wait(); close(done) }()

	deadline := time.Time{}
	if s.Ceiling > 0 {
		deadline = b.Started.Add(s.Ceiling)
	}
	lastAction := time.Now()
	killing := false
	kill := func(why, n string) {
		if killing {
			return
		}
		killing, ended, note = true, why, n
		go b.Kill(Grace, done)
	}
	// SIGTERM ends the box within its grace whatever action is being
	// applied (Containment): the kill starts here, not from the loop, which
	// may be inside an action; the action itself gives up its lock wait
	// with ctx.
	stopKill := context.AfterFunc(ctx, func() { b.Kill(Grace, done) })
	defer stopKill()
	tick := time.NewTicker(PollEvery)
	defer tick.Stop()
	ctxDone := ctx.Done()
	var wake <-chan struct{}
	if r.live != nil {
		// A live session claims its channel's relays as they are filed:
		// woken by the partition's changes, not only at the next tick.
		wctx, stopWatch := context.WithCancel(ctx)
		defer stopWatch()
		wake = s.watchTasks(wctx)
	}
loop:
	for {
		select {
		case <-done:
			break loop
		case <-r.escape:
			// ssh's ~.: the person at the terminal leaves now, whatever
			// the box's command does with signals.
			if !killing {
				killing, ended, note = true, "error", "ended from the terminal (~.)"
				go b.Kill(0, done)
			}
		case <-ctxDone:
			ctxDone = nil // once: a closed channel would spin this loop
			if !killing { // the kill itself was started by the AfterFunc above
				killing, ended, note = true, "error", "killed"
			}
		case <-tick.C:
		case <-wake:
		}
		if ctx.Err() != nil {
			continue // stopped: nothing more is served, only the box's end awaited
		}
		if s.serveActions(ctx, r.ob, r.rec, &r.ev, r.pace) || r.pace.holding() {
			lastAction = time.Now() // a box waiting for its answer is not idle
		}
		if r.live != nil && !killing {
			switch e, n := s.liveTick(ctx, r); e {
			case "":
			case "idle":
				// stdin is closed: the agent ends of itself, or is
				// killed after the grace
				killing, ended, note = true, e, n
				go func() {
					select {
					case <-done:
					case <-time.After(Grace):
						b.Kill(Grace, done)
					}
				}()
			default:
				kill(e, n)
			}
		}
		s.boundTmp(ctx, r.ob, r.rec, &r.ev, &r.tmpOver)
		now := time.Now()
		if !deadline.IsZero() && now.After(deadline) {
			r.ev.Ceiling = true
			kill("ceiling", "")
		}
		if s.Idle > 0 && now.Sub(r.tr.lastOutput()) > s.Idle && now.Sub(lastAction) > s.Idle {
			kill("idle", fmt.Sprintf("no output and no action for %s", s.Idle))
		}
	}
	if werr != nil && exit.Code < 0 {
		note = joinNote(note, "wait: "+werr.Error())
	}
	return ended, note, exit
}
