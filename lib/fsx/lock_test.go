package fsx

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/errs"
)

// openTwice opens one file twice: two open file descriptions, which flock
// treats like two processes.
func openTwice(t *testing.T) (a, b *os.File) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "lock")
	var err error
	if a, err = os.OpenFile(p, os.O_RDONLY|os.O_CREATE, 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err = os.Open(p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func TestFlockExclusiveExcludesEveryone(t *testing.T) {
	ctx := context.Background()
	for _, shared := range []bool{false, true} {
		a, b := openTwice(t)
		if err := Flock(ctx, a, false, 0); err != nil {
			t.Fatal(err)
		}
		if err := Flock(ctx, b, shared, 0); !errors.Is(err, errs.ErrBusy) {
			t.Errorf("shared=%v try on an exclusive lock: %v, want ErrBusy", shared, err)
		}
		Unlock(a)
		if err := Flock(ctx, b, shared, 0); err != nil {
			t.Errorf("after unlock: %v", err)
		}
	}
}

func TestFlockSharedCoexistsAndExcludesExclusive(t *testing.T) {
	ctx := context.Background()
	a, b := openTwice(t)
	if err := Flock(ctx, a, true, 0); err != nil {
		t.Fatal(err)
	}
	if err := Flock(ctx, b, true, 0); err != nil {
		t.Errorf("second shared: %v", err)
	}
	Unlock(b)
	if err := Flock(ctx, b, false, 0); !errors.Is(err, errs.ErrBusy) {
		t.Errorf("exclusive over shared: %v, want ErrBusy", err)
	}
}

func TestFlockWaitGivesUpAfterTheWait(t *testing.T) {
	a, b := openTwice(t)
	Flock(context.Background(), a, false, 0)
	start := time.Now()
	err := Flock(context.Background(), b, false, 150*time.Millisecond)
	if !errors.Is(err, errs.ErrBusy) {
		t.Fatalf("err %v, want ErrBusy", err)
	}
	if el := time.Since(start); el < 150*time.Millisecond {
		t.Errorf("gave up after %s, before the wait", el)
	}
}

func TestFlockWaitGetsTheLockWhenReleased(t *testing.T) {
	a, b := openTwice(t)
	Flock(context.Background(), a, false, 0)
	unlocked := make(chan struct{})
	time.AfterFunc(50*time.Millisecond, func() { Unlock(a); close(unlocked) })
	if err := Flock(context.Background(), b, false, time.Minute); err != nil {
		t.Fatal(err)
	}
	<-unlocked // a is closed by the cleanup only after its unlock returned
}

func TestFlockForeverBlocksUntilReleased(t *testing.T) {
	a, b := openTwice(t)
	Flock(context.Background(), a, false, 0)
	got := make(chan error, 1)
	go func() { got <- Flock(context.Background(), b, false, Forever) }()
	select {
	case err := <-got:
		t.Fatalf("took a held lock: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	Unlock(a)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

func TestFlockStopsWhenContextEnds(t *testing.T) {
	a, b := openTwice(t)
	Flock(context.Background(), a, false, 0)
	for _, wait := range []time.Duration{Forever, time.Hour} {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(30*time.Millisecond, cancel)
		if err := Flock(ctx, b, false, wait); !errors.Is(err, context.Canceled) {
			t.Errorf("wait %v: %v, want context.Canceled", wait, err)
		}
	}
}

func TestLockPathCreatesPrivateFileAndReleases(t *testing.T) {
	p := filepath.Join(t.TempDir(), ".lock")
	ctx := context.Background()
	l, err := LockPath(ctx, p, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode())
	}
	if _, err := LockPath(ctx, p, true, 0); !errors.Is(err, errs.ErrBusy) {
		t.Errorf("second holder: %v, want ErrBusy", err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(); err != nil {
		t.Errorf("second Unlock: %v", err)
	}
	l2, err := LockPath(ctx, p, false, 0)
	if err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	l2.Unlock()
	// Never through a symlink.
	link := filepath.Join(t.TempDir(), "link")
	os.Symlink(p, link)
	if _, err := LockPath(ctx, link, false, 0); err == nil {
		t.Error("LockPath followed a symlink")
	}
}
