package box

import (
	"strings"
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

// A box posting actions back to back, each taking cost of host time, for
// a minute of the fake clock: its first ActionBurst of actions are served
// at once, and from then on its actions take no more than ActionShare of
// the wall time, nor much less (the pacer bounds, it does not starve).
func TestPacerGivesABurstThenItsShare(t *testing.T) {
	for _, cost := range []time.Duration{5 * time.Millisecond, 127 * time.Millisecond, 3 * time.Second} {
		c := &fakeClock{t: time.Unix(1e9, 0)}
		p := newPacer(c.now)
		start := c.t
		served, firstHold := 0, time.Duration(-1)
		for c.t.Sub(start) < time.Minute {
			if !p.ready() {
				p.hold()
				if firstHold < 0 {
					firstHold = c.t.Sub(start)
				}
				c.advance(10 * time.Millisecond)
				continue
			}
			at := p.now()
			c.advance(cost)
			p.charge(at)
			served++
		}
		elapsed := c.t.Sub(start)
		if firstHold < ActionBurst {
			t.Errorf("cost %s: first pause after %s of actions, want the %s burst first", cost, firstHold, ActionBurst)
		}
		most := ActionBurst + time.Duration(float64(elapsed)*ActionShare) + cost
		least := time.Duration(float64(elapsed)*ActionShare) - cost
		if p.spent > most || p.spent < least {
			t.Errorf("cost %s: actions took %s of %s, want within [%s, %s]", cost, p.spent, elapsed, least, most)
		}
		if p.waits == 0 || p.waited <= 0 || p.waited >= elapsed {
			t.Errorf("cost %s: %d waits, %s waited", cost, p.waits, p.waited)
		}
		if n := p.note(); !strings.Contains(n, "actions paced") {
			t.Errorf("cost %s: note %q", cost, n)
		}
		t.Logf("cost %s: %d actions, %s of %s, %d pauses", cost, served, p.spent, elapsed, p.waits)
	}
}

// Credit builds up while the box posts nothing, but never beyond the
// burst: a box quiet for an hour gets ActionBurst at once, not an hour's
// worth.
func TestPacerCreditIsCappedAtTheBurst(t *testing.T) {
	c := &fakeClock{t: time.Unix(1e9, 0)}
	p := newPacer(c.now)
	at := p.now()
	c.advance(ActionBurst)
	p.charge(at) // the whole burst spent
	if p.ready() {
		t.Fatal("ready with no credit left")
	}
	c.advance(time.Hour)
	if !p.ready() {
		t.Fatal("not ready after an hour")
	}
	at = p.now()
	c.advance(ActionBurst + time.Millisecond)
	p.charge(at)
	if p.ready() {
		t.Fatalf("ready after spending more than the burst: credit %s", p.credit)
	}
	if w := p.wait(); w < time.Duration(float64(time.Millisecond)/ActionShare) || w > time.Second {
		t.Fatalf("wait %s for 1 ms of debt", w)
	}
}

// A pause is counted from the hold to the next ready, once however many
// times the box is looked at meanwhile; a run whose actions never waited
// says nothing.
func TestPacerCountsPauses(t *testing.T) {
	c := &fakeClock{t: time.Unix(1e9, 0)}
	p := newPacer(c.now)
	if p.note() != "" {
		t.Fatalf("note %q with no pause", p.note())
	}
	at := p.now()
	c.advance(3 * time.Second)
	p.charge(at) // 1 s of debt (the credit was full: the 3 s earned nothing): its wait is the debt over the share
	debt := 3*time.Second - ActionBurst
	want := time.Duration(float64(debt)/ActionShare) + time.Millisecond
	for i := 0; i < 10; i++ {
		if p.ready() {
			t.Fatalf("ready at look %d", i)
		}
		p.hold()
		if !p.holding() {
			t.Fatal("not holding after hold")
		}
		c.advance(100 * time.Millisecond)
	}
	c.advance(p.wait())
	if !p.ready() || p.holding() {
		t.Fatal("not ready after its wait")
	}
	if p.waits != 1 || p.waited < want-time.Millisecond || p.waited > want+time.Millisecond {
		t.Fatalf("%d pauses, %s waited; want 1 and %s", p.waits, p.waited, want)
	}
	if n := p.note(); !strings.Contains(n, "waited "+want.Round(time.Millisecond).String()+" in 1 pause (") || !strings.Contains(n, "took 3s") {
		t.Fatalf("note %q", n)
	}
}
