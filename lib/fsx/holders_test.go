package fsx

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseProcLocks(t *testing.T) {
	const procLocks = `1: FLOCK  ADVISORY  WRITE 3456 fe:00:1234 0 EOF
1: -> FLOCK  ADVISORY  WRITE 3460 fe:00:1234 0 EOF
2: FLOCK  ADVISORY  READ 77 fe:00:1234 0 EOF
3: FLOCK  ADVISORY  READ 0 fe:00:1234 0 EOF
4: POSIX  ADVISORY  WRITE 88 fe:00:1234 0 EOF
5: OFDLCK ADVISORY  READ  -1 fe:00:1234 0 EOF
6: FLOCK  ADVISORY  WRITE 99 fe:00:9999 0 EOF
7: FLOCK  ADVISORY  WRITE 98 fe:01:1234 0 EOF
8: LEASE  ACTIVE    READ 5 fe:00:1234 0 EOF
9: FLOCK  ADVISORY  WRITE notapid fe:00:1234 0 EOF
garbage
10: FLOCK  ADVISORY  WRITE 97 fe:00 0 EOF
`
	got := ParseProcLocks([]byte(procLocks), unix.Mkdev(0xfe, 0), 1234)
	want := []FlockHolder{
		{Pid: 3456, Exclusive: true},
		{Pid: 3460, Exclusive: true, Waiting: true},
		{Pid: 77},
		{Pid: 0},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("entry %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	// A large major and minor (minor above 255) round-trip.
	line := "1: FLOCK  ADVISORY  READ 5 103:1f4:42 0 EOF\n"
	if h := ParseProcLocks([]byte(line), unix.Mkdev(0x103, 0x1f4), 42); len(h) != 1 {
		t.Errorf("major 0x103 minor 0x1f4: %+v", h)
	}
}

func FuzzParseProcLocks(f *testing.F) {
	f.Add([]byte("1: FLOCK  ADVISORY  WRITE 3456 fe:00:1234 0 EOF\n"), uint64(0xfe00), uint64(1234))
	f.Add([]byte("1: -> FLOCK  ADVISORY  READ 1 0:0:0 0 EOF"), uint64(0), uint64(0))
	f.Fuzz(func(t *testing.T, data []byte, dev, ino uint64) {
		for _, h := range ParseProcLocks(data, dev, ino) {
			_ = h // it must not panic; every entry matched dev and ino
		}
	})
}

func TestFlockHoldersAndProbeSeeRealLocks(t *testing.T) {
	a, b := openTwice(t)
	c, err := os.Open(a.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if s, err := ProbeFlock(b); err != nil || s != FlockFree {
		t.Fatalf("free lock probed as %v, %v", s, err)
	}
	if hs, err := FlockHolders(b); err != nil || len(hs) != 0 {
		t.Fatalf("free lock has holders %+v, %v", hs, err)
	}

	unix.Flock(int(a.Fd()), unix.LOCK_SH)
	if s, _ := ProbeFlock(b); s != FlockShared {
		t.Errorf("shared lock probed as %v", s)
	}
	hs, err := FlockHolders(b)
	if err != nil || len(hs) != 1 || hs[0].Pid != os.Getpid() || hs[0].Exclusive || hs[0].Waiting {
		t.Errorf("shared holder: %+v, %v (want our pid %d)", hs, err, os.Getpid())
	}
	unix.Flock(int(c.Fd()), unix.LOCK_SH)
	if hs, _ := FlockHolders(b); len(hs) != 2 {
		t.Errorf("two shared holders, /proc/locks shows %+v", hs)
	}
	unix.Flock(int(c.Fd()), unix.LOCK_UN)

	unix.Flock(int(a.Fd()), unix.LOCK_EX)
	if s, _ := ProbeFlock(b); s != FlockExclusive {
		t.Errorf("exclusive lock probed as %v", s)
	}
	if hs, _ := FlockHolders(b); len(hs) != 1 || !hs[0].Exclusive {
		t.Errorf("exclusive holder: %+v", hs)
	}
	// The probe left nothing behind.
	unix.Flock(int(a.Fd()), unix.LOCK_UN)
	if err := unix.Flock(int(c.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Errorf("lock not free after the probes: %v", err)
	}
	for _, s := range []FlockState{FlockFree, FlockShared, FlockExclusive} {
		if s.String() == "" {
			t.Errorf("state %d has no name", s)
		}
	}
}
