package main

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/cli/out"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/jsonw"
)

// lockInfo is one line of --ls; its JSON form is a stable contract.
type lockInfo struct {
	Name          string `json:"name"`
	State         string `json:"state"`           // free, shared, exclusive, refused
	Holders       []int  `json:"holders"`         // pids as seen from here
	HeldElsewhere bool   `json:"held_elsewhere"`  // a holder we cannot see (outside this box)
	Waiting       int    `json:"waiting"`         // processes blocked waiting for it, where visible
	Error         string `json:"error,omitempty"` // why a refused entry is not a lock file
}

// appendJSON appends the --json line of in, byte for byte what
// encoding/json writes for it (TestLockInfoJSONIsEncodingJSONs), holders
// [] when there are none: roster-lock links no encoding/json, whose
// package initialisation would cost every start (the v2 encoder under
// Go 1.27's: 25 page faults and 860 KB of binary).
func (in lockInfo) appendJSON(b []byte) []byte {
	b = append(b, `{"name":`...)
	b = jsonw.AppendString(b, in.Name, false)
	b = append(b, `,"state":`...)
	b = jsonw.AppendString(b, in.State, false)
	b = append(b, `,"holders":[`...)
	for i, p := range in.Holders {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(p), 10)
	}
	b = append(b, `],"held_elsewhere":`...)
	b = strconv.AppendBool(b, in.HeldElsewhere)
	b = append(b, `,"waiting":`...)
	b = strconv.AppendInt(b, int64(in.Waiting), 10)
	if in.Error != "" {
		b = append(b, `,"error":`...)
		b = jsonw.AppendString(b, in.Error, false)
	}
	return append(b, "}\n"...)
}

// listLocks prints every lock file in the folder with its state. Names a
// lock cannot have are skipped; a symlink, FIFO or folder under a lock
// name is shown as refused, never opened through.
func listLocks(env *out.Env, dir *os.File, jsonOut bool) error {
	var names []string
	if dir != nil { // nil: a store with no .locks yet lists nothing
		var err error
		if names, err = dir.Readdirnames(-1); err != nil {
			return fmt.Errorf("list %s: %w", dir.Name(), err)
		}
	}
	sort.Strings(names)
	procLocks, procErr := os.ReadFile("/proc/locks")
	var infos []lockInfo
	for _, n := range names {
		if home.ValidLock(n) != nil {
			continue
		}
		infos = append(infos, inspect(dir, n, procLocks, procErr == nil))
	}
	if jsonOut {
		var b []byte
		for _, in := range infos {
			b = in.appendJSON(b)
		}
		_, err := env.Stdout.Write(b)
		return err
	}
	rows := make([][]string, 0, len(infos))
	for _, in := range infos {
		state := in.State
		switch in.State {
		case "shared", "exclusive":
			state = "held " + in.State
		case "refused":
			state = "refused: " + in.Error
		}
		var who []string
		for _, p := range in.Holders {
			who = append(who, strconv.Itoa(p))
		}
		if in.HeldElsewhere {
			who = append(who, "elsewhere")
		}
		if len(who) == 0 {
			who = []string{"-"}
		}
		rows = append(rows, []string{in.Name, state, strings.Join(who, ","), strconv.Itoa(in.Waiting)})
	}
	return out.Table(env.Stdout, []string{"NAME", "STATE", "HOLDERS", "WAITING"}, rows)
}

// inspect finds one lock's state: /proc/locks where it shows a holder,
// otherwise a non-blocking try, which also sees holders that this pid
// namespace hides (inside a box, those outside it: "held elsewhere").
func inspect(dir *os.File, name string, procLocks []byte, procOK bool) lockInfo {
	in := lockInfo{Name: name, State: "free"}
	refuse := func(why string) lockInfo {
		in.State, in.Error = "refused", why
		return in
	}
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return refuse("a symlink")
		}
		return refuse(err.Error())
	}
	f := os.NewFile(uintptr(fd), dir.Name()+"/"+name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return refuse(err.Error())
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return refuse("not a regular file")
	}
	var holders []fsx.FlockHolder
	if procOK {
		holders = fsx.ParseProcLocks(procLocks, st.Dev, st.Ino)
	}
	held := false
	for _, h := range holders {
		if h.Waiting {
			in.Waiting++
			continue
		}
		held = true
		if h.Exclusive {
			in.State = "exclusive"
		} else if in.State == "free" {
			in.State = "shared"
		}
		if visible(h.Pid) {
			in.Holders = append(in.Holders, h.Pid)
		} else {
			in.HeldElsewhere = true
		}
	}
	if !held {
		s, err := fsx.ProbeFlock(f)
		if err != nil {
			return refuse(err.Error())
		}
		if s != fsx.FlockFree {
			in.State, in.HeldElsewhere = s.String(), true
		}
	}
	return in
}

// visible tells whether pid names a process we can see.
func visible(pid int) bool {
	if pid <= 0 {
		return false
	}
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}

// describeHolders names who holds f's lock for the busy message: "pid 123
// (sleep)", or "a process outside this box" when only a try shows it.
func describeHolders(f *os.File) string {
	hs, err := fsx.FlockHolders(f)
	if err != nil {
		return ""
	}
	var who []string
	hidden := false
	for _, h := range hs {
		if h.Waiting {
			continue
		}
		if !visible(h.Pid) {
			hidden = true
			continue
		}
		w := "pid " + strconv.Itoa(h.Pid)
		if comm, err := os.ReadFile("/proc/" + strconv.Itoa(h.Pid) + "/comm"); err == nil {
			w += " (" + strings.TrimSpace(string(comm)) + ")"
		}
		who = append(who, w)
	}
	if len(who) == 0 && (hidden || len(hs) == 0) && os.Getenv("ROSTER_OUTBOX") != "" {
		return "a process outside this box"
	}
	return strings.Join(who, ", ")
}

// parseWait reads --wait: a duration ("300ms", "1m30s", "1d") or a bare
// number of seconds ("5", "0.5") as flock(1) -w takes. Negative is refused.
func parseWait(s string) (time.Duration, error) {
	if s == "" {
		return 0, fmt.Errorf("empty duration")
	}
	d, err := home.ParseDuration(s)
	if err != nil {
		secs, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || secs != secs {
			return 0, fmt.Errorf("%q: not a duration (try 300ms, 5s, 2m, 1d, or a number of seconds)", s)
		}
		if secs < 0 {
			return 0, fmt.Errorf("%q: must not be negative", s)
		}
		if secs > float64(1<<62)/float64(time.Second) {
			return 0, fmt.Errorf("%q: too long", s)
		}
		d = time.Duration(secs * float64(time.Second))
	}
	if d < 0 {
		return 0, fmt.Errorf("%q: must not be negative", s)
	}
	return d, nil
}
