package dispatch

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/roster-sh/roster/lib/fsx"
)

// idleHome is a home of n idle workers (heartbeat off, nothing filed),
// plus "beat" on a 30 m heartbeat, "busy", whose files are touched, and
// "broke", which cannot be read.
func idleHome(t *testing.T, n int) *fixture {
	t.Helper()
	f := newFixture(t, "[dispatch]\ncap = 3\nzone = \"UTC\"\n")
	f.clock.t = time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC) // no day turns below
	for i := 0; i < n; i++ {
		f.worker(fmt.Sprintf("idle%04d", i), "")
	}
	uid++
	if err := os.WriteFile(f.h.SpecFile("beat"), []byte(fmt.Sprintf("command = [\"/bin/true\"]\nuid = %d\nheartbeat = \"30m\"\n", uid)), 0o644); err != nil {
		t.Fatal(err)
	}
	f.worker("busy", "")
	// and "broke", whose spec does not parse: logged once, never read at
	// every tick
	if err := os.WriteFile(f.h.SpecFile("broke"), []byte("command = [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Identities taken within fsx.RacyWindow of a file's change are re-checked
	// by reading: let the files age past it, as a live home's have.
	time.Sleep(fsx.RacyWindow + 100*time.Millisecond)
	return f
}

// work is what the dispatcher did between two Counts.
func work(a, b Counts) Counts {
	return Counts{SpecReads: b.SpecReads - a.SpecReads, OrgReads: b.OrgReads - a.OrgReads, Listings: b.Listings - a.Listings,
		Evaluations: b.Evaluations - a.Evaluations, ReclaimReads: b.ReclaimReads - a.ReclaimReads,
		IdentityChecks: b.IdentityChecks - a.IdentityChecks, Visits: b.Visits - a.Visits}
}

// TestIdleWorkersCostNoReads is the scale issue's counting test: once the
// first tick has read every worker, poll periods with nothing changed read
// no spec, no partition and evaluate no worker, whether change
// notifications are on or the dispatcher polls (which checks identities
// only); the reclaim pass reads no idle partition; filing to one worker
// reads that worker alone; a spec change reads that spec alone; a
// heartbeat coming evaluates its worker alone. Work that grows with idle
// workers fails it, with no timing involved.
func TestIdleWorkersCostNoReads(t *testing.T) {
	const n = 1000
	ctx := context.Background()
	for _, watching := range []bool{true, false} {
		t.Run(fmt.Sprintf("watching=%v", watching), func(t *testing.T) {
			f := idleHome(t, n)
			d := f.dispatcher(Options{})
			d.watching = watching
			d.Reclaim(ctx) // start-up: reads them all
			d.Tick(ctx)
			first := d.Counts()
			if first.Evaluations < n || first.SpecReads < n {
				t.Fatalf("the first tick did not read every worker: %+v", first)
			}
			// The first tick wrote beat's heartbeat template: that change is
			// looked at once, after it has aged past fsx.RacyWindow.
			time.Sleep(fsx.RacyWindow + 100*time.Millisecond)
			d.lastFull = time.Time{}
			d.Tick(ctx)
			before := d.Counts()
			for i := 0; i < 30; i++ { // a minute of 2 s polls
				f.clock.add(2 * time.Second)
				d.Tick(ctx)
			}
			// A tick looks only at the workers that changed or are due
			// (broke's re-check; beat's heartbeat is 30 m away), never at
			// every idle one; polling, it stats each (below).
			if v := work(before, d.Counts()).Visits; watching && v > int64(60*time.Second/HoldRecheck)+1 {
				t.Fatalf("30 idle ticks looked at %d workers of %d idle ones", v, n)
			}
			d.lastFull = time.Time{} // and a verifying pass
			d.Tick(ctx)
			d.Reclaim(ctx)
			w := work(before, d.Counts())
			// broke alone is looked at again, on the slow timer (a stat of
			// its spec, which has not changed: no read).
			rechecks := int64(62*time.Second/HoldRecheck) + 1
			if w.SpecReads != 0 || w.Evaluations > rechecks || w.ReclaimReads != 0 || w.OrgReads != 0 || w.Listings != 0 {
				t.Fatalf("31 idle ticks and a reclaim over %d idle workers did work: %+v\n%s", n, w, f.log)
			}
			// Identity checks only: two stats per worker on a verifying
			// pass (every tick when polling), a handful per tick otherwise.
			passes := int64(1)
			if !watching {
				passes = 31
			}
			if max := passes*2*(n+3) + 31*8; w.IdentityChecks > max {
				t.Fatalf("identity checks %d, want at most %d", w.IdentityChecks, max)
			}

			if c := f.log.count("skipping until it can be read"); c != 1 {
				t.Fatalf("broke's spec logged %d times, want once:\n%s", c, f.log)
			}

			// Filing to busy: it alone is read.
			before = d.Counts()
			f.add("busy", 1)
			time.Sleep(fsx.RacyWindow + 100*time.Millisecond)
			d.changed(f.h.Worker("busy").TasksFile())
			rep := d.Tick(ctx)
			if len(rep.Started) != 1 || rep.Started[0].Worker != "busy" {
				t.Fatalf("the task filed to busy was not claimed: %+v", rep.Started)
			}
			if w := work(before, d.Counts()); w.Evaluations != 1 || w.SpecReads != 0 {
				t.Fatalf("filing to one worker: %+v, want one evaluation and no spec read", w)
			}

			// busy's spec changes: its spec alone is read again.
			spec, _ := os.ReadFile(f.h.SpecFile("busy"))
			os.WriteFile(f.h.SpecFile("busy"), append(spec, "concurrency = 2\n"...), 0o644)
			before = d.Counts()
			d.changed(f.h.SpecFile("busy"))
			d.lastFull = time.Time{} // poll mode sees it by its identity
			d.Tick(ctx)
			if w := work(before, d.Counts()); w.SpecReads != 1 || w.Evaluations < 1 || w.Evaluations > 2 {
				t.Fatalf("one spec changed: %+v, want that spec read and its worker evaluated", w)
			}

			// beat's heartbeat comes: it alone is evaluated.
			f.clock.add(31 * time.Minute)
			before = d.Counts()
			rep = d.Tick(ctx)
			if w := work(before, d.Counts()); w.Evaluations < 1 || w.Evaluations > 3 || w.SpecReads > 1 {
				t.Fatalf("a heartbeat's activation: %+v, want beat alone evaluated", w)
			}
			fired := false
			for _, st := range rep.Started {
				fired = fired || st.Worker == "beat"
			}
			if !fired {
				t.Fatalf("beat's heartbeat did not start a box: %+v\n%s", rep.Started, f.log)
			}
		})
	}
}

// TestOutOfInotifyWatchesPollsTheRestAndSaysSoOnce: when the host's inotify
// watches run out, the dispatcher says so once (with the limit and how to
// raise it), and a task filed to a worker it could not watch is still
// claimed, by the tick's identity check, well before the minute's
// verifying pass.
func TestOutOfInotifyWatchesPollsTheRestAndSaysSoOnce(t *testing.T) {
	f := newFixture(t, "")
	for _, w := range []string{"a", "b", "c", "d"} {
		f.worker(w, "")
		f.part(w).Read(context.Background())
		os.MkdirAll(f.h.Worker(w).Tasks(), 0o700)
	}
	old := addWatch
	added := 0
	addWatch = func(fw *fsnotify.Watcher, path string) error {
		if added >= 4 { // workers/, data/workers, the vault, and one worker's
			return syscall.ENOSPC
		}
		added++
		return fw.Add(path)
	}
	defer func() { addWatch = old }()
	stop := f.run(f.dispatcher(Options{Poll: 200 * time.Millisecond}))
	deadline := time.Now().Add(20 * time.Second)
	time.Sleep(fsx.RacyWindow + 100*time.Millisecond)
	f.add("d", 1)
	for f.claimed("d") == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the task filed to an unwatched worker was not claimed\n%s", f.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := f.log.count("out of inotify watches"); n != 1 || !strings.Contains(f.log.String(), "max_user_watches") {
		t.Fatalf("the limit was said %d times, want once naming max_user_watches:\n%s", n, f.log)
	}
	stop()
}
