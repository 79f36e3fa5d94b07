package main

import (
	"io"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/roster-sh/roster/lib/cli"
)

// kongArgs parses args with kong as cli.Main does (without running).
func kongArgs(args []string) (c *CLI, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	c = &CLI{}
	p, err := kong.New(c, kong.Name("roster-lock"), kong.Writers(io.Discard, io.Discard),
		kong.Exit(func(int) { panic("exit") }))
	if err != nil {
		panic(err)
	}
	if _, err := p.Parse(args); err != nil {
		return nil, false
	}
	return c, true
}

// sameAsKong fails the test when fastArgs takes args but kong would parse
// them differently or not at all.
func sameAsKong(t *testing.T, args []string) bool {
	t.Helper()
	fc, fg, ok := fastArgs(append([]string(nil), args...))
	if !ok {
		return false
	}
	kc, kok := kongArgs(append([]string(nil), args...))
	if !kok {
		t.Fatalf("fastArgs took %q, kong refuses it", args)
	}
	if len(kc.Command) > 0 && kc.Command[0] == "--" { // as Run does
		kc.Command = kc.Command[1:]
	}
	if kc.Globals.Home != fg.Home {
		t.Fatalf("%q: home %q, kong %q", args, fg.Home, kc.Globals.Home)
	}
	kc.Globals, fc.Globals = cli.Globals{}, cli.Globals{}
	if !reflect.DeepEqual(fc, kc) {
		t.Fatalf("%q:\nfastArgs %+v\nkong     %+v", args, *fc, *kc)
	}
	return true
}

func unsetHome(t *testing.T) {
	old, had := os.LookupEnv("ROSTER_HOME")
	os.Unsetenv("ROSTER_HOME")
	t.Cleanup(func() {
		if had {
			os.Setenv("ROSTER_HOME", old)
		}
	})
}

// TestFastArgsParseLikeKong: the common invocations skip kong and get the
// fields kong would give; everything else is left to kong.
func TestFastArgsParseLikeKong(t *testing.T) {
	unsetHome(t)
	for _, args := range [][]string{
		{"--home", "/h", "L", "--worker", "bench", "--", "/bin/true"},
		{"L", "--worker=w", "--", "true", "-x", "--", "y"},
		{"--home=/h", "-s", "db", "--store", "/s", "--", "sh", "-c", "x"},
		{"-n", "--shared", "L.1", "--worker", "w", "--home", "h", "--", "cmd"},
		{"--nonblock", "--store=/x", "L", "--", "c"},
	} {
		if !sameAsKong(t, args) {
			t.Errorf("fastArgs left %q to kong", args)
		}
	}
	for _, args := range [][]string{
		{}, {"--help"}, {"-h"}, {"--version"}, {"L", "--worker", "w", "--help", "--", "c"},
		{"--ls", "--worker", "w"}, {"L", "--worker", "w", "--wait", "1", "--", "c"},
		{"L", "-w", "1", "--worker", "w", "--", "c"}, {"L", "-E", "3", "--worker", "w", "--", "c"},
		{"L", "--worker", "w", "--"}, {"L", "--worker", "w", "--", "-c"}, {"L", "--worker", "w", "--", ""},
		{"L", "--worker", "w", "--", "--", "c"}, {"L", "--", "c"}, {"L", "--worker", "w", "--store", "s", "--", "c"},
		{"L", "M", "--worker", "w", "--", "c"}, {"L", "--worker", "w", "--worker", "v", "--", "c"},
		{"L", "-s", "-s", "--worker", "w", "--", "c"}, {"L", "-sn", "--worker", "w", "--", "c"},
		{"L", "--worker", "-x", "--", "c"}, {"L", "--worker=", "--", "c"}, {"L", "--worker"},
		{"--worker", "w", "--", "c"}, {"", "--worker", "w", "--", "c"}, {"L", "--worker", "w", "c"},
		{"L", "--json", "--worker", "w", "--", "c"}, {"L", "--home", "", "--worker", "w", "--", "c"},
	} {
		if sameAsKong(t, args) {
			t.Errorf("fastArgs took %q, meant for kong", args)
		}
	}
	t.Setenv("ROSTER_HOME", "/env")
	if sameAsKong(t, []string{"L", "--worker", "w", "--", "c"}) {
		t.Error("fastArgs took an invocation without --home while ROSTER_HOME is set")
	}
	if !sameAsKong(t, []string{"--home", "/h", "L", "--worker", "w", "--", "c"}) {
		t.Error("fastArgs left --home with ROSTER_HOME set to kong")
	}
}

// FuzzFastArgs: whatever fastArgs takes, kong parses to the same fields.
// Input: arguments separated by newlines.
func FuzzFastArgs(f *testing.F) {
	for _, s := range []string{
		"--home\n/h\nL\n--worker\nbench\n--\n/bin/true",
		"L\n--worker=w\n--\ntrue\n-x",
		"-s\ndb\n--store\n/s\n--\nsh",
		"-n\n--shared\nL\n--worker\nw\n--home=h\n--\ncmd",
		"L\n--worker\nw\n--wait\n1\n--\nc",
		"--ls\n--worker\nw",
		"L\n--worker\n--\n--\nc",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		unsetHome(t)
		sameAsKong(t, strings.Split(s, "\n"))
	})
}
