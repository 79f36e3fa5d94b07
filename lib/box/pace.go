package box

import (
	"fmt"
	"time"
)

// Action pacing (Containment). Applying a box's action is host work done
// for its worker: the partition lock, tasks.json and view/schedule.json
// rewritten whole, fsyncs. A box that files as fast as the host answers
// would otherwise keep one supervisor writing its partition all the time,
// and every other worker's filings and claims would wait behind that
// worker's writes on the shared disk. So a run's actions may take at most
// ActionShare of the wall time, after a burst of ActionBurst: the host
// answers a box's first seconds of actions at once, and a box that goes on
// posting waits its turn (its roster-task call simply takes longer).
//
// A tenth, measured (bench/contain.sh FLOOD=bulk PREFILL=150, a box
// posting 12 kB filings ten at a time into a 9 MB partition): another
// worker's filing -> claimed was 3.3-4.4x the quiet case unpaced, 1.2-1.8x
// at a quarter, 1.0-1.3x at a tenth or 0.15.
const (
	ActionShare = 0.1             // of the wall time a run's actions may take, sustained
	ActionBurst = 2 * time.Second // of action time a run may spend before it is paced
	// ActionBatch bounds how many actions one look at the outbox takes:
	// how far a run may spend beyond its credit before it is paced.
	ActionBatch = 8
)

// A pacer is a token bucket measured in time: credit grows by share of
// the wall time that passes, up to burst, and every action's own duration
// is taken from it. While the credit is spent (zero or less), no more
// actions are taken.
type pacer struct {
	share float64
	burst time.Duration
	now   func() time.Time

	credit time.Duration
	at     time.Time // when credit was last brought up to date

	// What a run's record says about its pacing.
	spent  time.Duration // action time in all
	paced  bool          // waiting now, since since
	since  time.Time
	waited time.Duration // time actions waited for credit, in all
	waits  int           // how many times they did
}

func newPacer(now func() time.Time) *pacer {
	if now == nil {
		now = time.Now
	}
	t := now()
	return &pacer{share: ActionShare, burst: ActionBurst, now: now, credit: ActionBurst, at: t}
}

// refill brings the credit up to t.
func (p *pacer) refill(t time.Time) {
	if d := t.Sub(p.at); d > 0 {
		p.credit += time.Duration(float64(d) * p.share)
		if p.credit > p.burst {
			p.credit = p.burst
		}
		p.at = t
	}
}

// ready reports whether actions may be taken now; it ends a wait that
// hold started.
func (p *pacer) ready() bool {
	t := p.now()
	p.refill(t)
	if p.credit <= 0 {
		return false
	}
	if p.paced {
		p.paced = false
		p.waited += t.Sub(p.since)
	}
	return true
}

// hold notes that an action is waiting for credit (ready was false).
func (p *pacer) hold() {
	if !p.paced {
		p.paced, p.since = true, p.now()
		p.waits++
	}
}

// holding reports whether an action waits for credit.
func (p *pacer) holding() bool { return p.paced }

// wait is how long until ready can be true again.
func (p *pacer) wait() time.Duration {
	p.refill(p.now())
	if p.credit > 0 {
		return 0
	}
	return time.Duration(float64(-p.credit)/p.share) + time.Millisecond
}

// charge takes an action's duration, from start to now, from the credit.
func (p *pacer) charge(start time.Time) {
	t := p.now()
	d := t.Sub(start)
	if d < 0 {
		d = 0
	}
	p.refill(t)
	p.credit -= d
	p.spent += d
}

// note is what run.json's evidence says of the pacing, "" when no action
// ever waited.
func (p *pacer) note() string {
	if p.paced {
		p.waited += p.now().Sub(p.since)
		p.paced = false
	}
	if p.waits == 0 {
		return ""
	}
	pauses := "1 pause"
	if p.waits > 1 {
		pauses = fmt.Sprintf("%d pauses", p.waits)
	}
	return fmt.Sprintf("actions paced: they took %s of host time and waited %s in %s (a run's actions get %d%% of the wall time after a %s burst)",
		p.spent.Round(time.Millisecond), p.waited.Round(time.Millisecond), pauses, int(ActionShare*100), ActionBurst)
}
