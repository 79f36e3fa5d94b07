package tms

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/home"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}
func (c *fakeClock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

var ctx = context.Background()

// newHome makes a home with data/ and a spec for each worker.
func newHome(t testing.TB, workers ...string) home.Home {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "workers"), 0o755)
	for _, w := range workers {
		if err := os.WriteFile(filepath.Join(dir, "workers", w+".toml"), []byte("heartbeat = \"off\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h, err := home.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func defaultOrg(t testing.TB) *config.Org {
	o, err := config.ParseOrg("org.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	o.Storage.MinFree = 0
	return o
}

var t0 = time.Date(2026, 11, 29, 19, 22, 1, 0, time.UTC)

// open returns worker's partition on a fake clock at t0.
func open(t testing.TB, h home.Home, worker string) (*Partition, *fakeClock) {
	t.Helper()
	c := &fakeClock{t: t0}
	p, err := Open(h, worker, Options{Clock: c, Org: defaultOrg(t), Worker: &config.Worker{Name: worker, Command: []string{"/bin/true"}}})
	if err != nil {
		t.Fatal(err)
	}
	return p, c
}

func mustAdd(t testing.TB, p *Partition, nt NewTask) Task {
	t.Helper()
	task, err := p.Add(ctx, nt)
	if err != nil {
		t.Fatalf("add %q: %v", nt.Text, err)
	}
	return task
}

func mustRead(t testing.TB, p *Partition) *File {
	t.Helper()
	f, err := p.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func mustJournal(t testing.TB, p *Partition) []Line {
	t.Helper()
	l, err := p.Journal(0)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mustClean(t testing.TB, p *Partition) {
	t.Helper()
	r, err := p.Fsck(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Clean() {
		t.Fatalf("fsck: %v", r.Problems)
	}
}
