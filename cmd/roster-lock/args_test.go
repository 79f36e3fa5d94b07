package main

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/alecthomas/kong"
)

// kongGrammar is roster-lock's grammar as kong read it until args.go
// replaced it (lib/cli.Globals inlined): the reference parseArgs is held
// to. kong is linked into this test only.
type kongGrammar struct {
	Home    string           `name:"home" env:"ROSTER_HOME" default:"." placeholder:"DIR"`
	Version kong.VersionFlag `name:"version"`

	Name    string   `arg:"" optional:""`
	Command []string `arg:"" optional:"" passthrough:"partial"`

	Shared           bool         `short:"s"`
	Nonblock         bool         `short:"n" xor:"wait"`
	Wait             kongWaitFlag `short:"w" xor:"wait" placeholder:"DUR"`
	ConflictExitCode int          `short:"E" default:"11" placeholder:"N"`
	Worker           string       `xor:"where" placeholder:"W"`
	Store            string       `xor:"where" placeholder:"DIR"`
	Ls               bool
	JSON             bool `name:"json"`
}

type kongWaitFlag struct {
	d   time.Duration
	set bool
}

func (w *kongWaitFlag) Decode(ctx *kong.DecodeContext) error {
	var s string
	if err := ctx.Scan.PopValueInto("duration", &s); err != nil {
		return err
	}
	d, err := parseWait(s)
	if err != nil {
		return err
	}
	w.d, w.set = d, true
	return nil
}

type exitPanic struct{}

// kongParse parses args as cli.Main did, into opts (Command with the
// leading "--" that Run used to drop dropped) or an error message.
func kongParse(args []string) (o *opts, msg string) {
	g := &kongGrammar{}
	var stdout bytes.Buffer
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(exitPanic); !ok {
					panic(r)
				}
			}
		}()
		p, err := kong.New(g, kong.Name("roster-lock"), kong.Writers(&stdout, &stdout),
			kong.Exit(func(int) { panic(exitPanic{}) }), kong.Vars{"version": "roster-lock V"})
		if err != nil {
			panic(err)
		}
		if _, err := p.Parse(args); err != nil {
			msg = err.Error()
			return
		}
		o = &opts{Home: g.Home, Name: g.Name, Command: g.Command, Shared: g.Shared, Nonblock: g.Nonblock,
			Wait: g.Wait.d, WaitSet: g.Wait.set, ConflictExitCode: g.ConflictExitCode,
			Worker: g.Worker, Store: g.Store, Ls: g.Ls, JSON: g.JSON}
	}()
	switch {
	case strings.HasPrefix(stdout.String(), "Usage:"):
		return &opts{show: "help"}, ""
	case stdout.String() == "roster-lock V\n":
		return &opts{show: "version"}, ""
	}
	if o != nil {
		if len(o.Command) > 0 && o.Command[0] == "--" {
			o.Command = o.Command[1:]
		}
		if len(o.Command) == 0 {
			o.Command = nil
		}
	}
	return o, msg
}

// kongWording is what parseArgs words differently from kong, on purpose:
// no "did you mean" list (kong's offers every short flag for any unknown
// one), "nothing" for a value missing at the end, and an unknown short
// flag that is not ASCII named whole (kong named its first byte).
var kongWording = strings.NewReplacer(`"EOL" (<EOL>)`, "nothing")

var didYouMean = regexp.MustCompile(`, did you mean .*\?$`)

// sameAsKong fails the test when parseArgs and kong disagree on args:
// both must take them with the same result, or both refuse them with the
// same message.
func sameAsKong(t *testing.T, args []string) {
	t.Helper()
	want, wantMsg := kongParse(append([]string(nil), args...))
	got, err := parseArgs(append([]string(nil), args...), os.LookupEnv)
	if want == nil {
		wantMsg = didYouMean.ReplaceAllString(kongWording.Replace(wantMsg), "")
		if err == nil {
			t.Fatalf("%q: parseArgs took it as %+v; kong refuses it: %s", args, *got, wantMsg)
		}
		if err.Error() != wantMsg && utf8.ValidString(wantMsg) {
			t.Fatalf("%q: parseArgs says %q, kong %q", args, err, wantMsg)
		}
		return
	}
	if err != nil {
		t.Fatalf("%q: parseArgs refuses it (%v); kong takes it as %+v", args, err, *want)
	}
	if got.show != "" || want.show != "" {
		if got.show != want.show {
			t.Fatalf("%q: parseArgs shows %q, kong %q", args, got.show, want.show)
		}
		return
	}
	if len(got.Command) == 0 {
		got.Command = nil
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\nparseArgs %+v\nkong      %+v", args, *got, *want)
	}
}

func unsetHome(t *testing.T) {
	t.Setenv("ROSTER_HOME", "") // restored after the test
	os.Unsetenv("ROSTER_HOME")
}

// parseCases are command lines of every documented form and every odd
// corner kong had an answer for.
var parseCases = [][]string{
	{}, {"L", "--worker", "w", "--", "true"}, {"--home", "/h", "L", "--worker", "bench", "--", "/bin/true"},
	{"L", "--worker=w", "--", "true", "-x", "--", "y"}, {"--home=/h", "-s", "db", "--store", "/s", "--", "sh", "-c", "x"},
	{"-n", "--shared", "L.1", "--worker", "w", "--home", "h", "--", "cmd"}, {"--nonblock", "--store=/x", "L", "--", "c"},
	{"L", "--worker", "w", "true", "-x", "--y"}, {"L", "true", "--worker", "w"}, {"L", "M", "N"}, {"L", "M", "--", "c"},
	{"L", "--worker", "w", "--", "--", "true"}, {"L", "--worker", "w", "--", "--"}, {"L", "--"}, {"L", "--", "--"},
	{"--", "L", "c"}, {"--", "L", "--", "c"}, {"--", "--help"}, {"L", "--", "--help"}, {"L", "c", "--help"}, {"L", "c", "--bogus"},
	{"-", "--worker", "w", "--", "c"}, {"L", "-", "c"}, {"", "--worker", "w", "--", "c"}, {"L", "--worker", "w", "--", ""},
	{"L", "-sn", "--worker", "w", "--", "c"}, {"-ns", "L"}, {"-s", "-s", "L"}, {"L", "-w1", "--", "c"}, {"L", "-w=1", "--", "c"},
	{"L", "-E75", "--", "c"}, {"L", "-E=75", "--", "c"}, {"L", "-E", "x", "--", "c"}, {"L", "-Es"}, {"L", "-wE"},
	{"L", "-E", "0x10"}, {"L", "-E", "1_0"}, {"L", "-E", "+5"}, {"L", "-E", "0"}, {"L", "-E", ""}, {"L", "-E", "99999999999999999999"},
	{"L", "--conflict-exit-code=-1", "--", "c"}, {"L", "--conflict-exit-code", "-5"}, {"-E", "-1", "L"}, {"-E"}, {"-w"},
	{"L", "-w", "-1s", "--", "c"}, {"L", "-w", "soon"}, {"L", "--wait="}, {"L", "--wait", ""}, {"L", "-w", "1e3"},
	{"L", "--wait", "300ms", "--", "c"}, {"L", "--wait", "1", "--wait", "2", "--", "c"}, {"L", "-E", "1", "-E", "2"},
	{"L", "-n", "-w", "1", "--", "c"}, {"L", "--worker", "w", "--store", "s", "--", "c"}, {"L", "--worker=", "--store", "s"},
	{"L", "--nonblock=false", "-w", "1"}, {"-n", "-w", "1", "--help"}, {"--worker", "w", "--store", "s", "--version"},
	{"--help"}, {"-h"}, {"--help", "L"}, {"L", "--version"}, {"--version", "--help"}, {"--help", "--version"}, {"-hs"}, {"-sh"},
	{"--help", "--bogus"}, {"--bogus", "--help"}, {"--version", "--bogus"}, {"--home=x", "--version"}, {"--help=false", "L"},
	{"--version=no"}, {"--help=maybe"}, {"-hx"}, {"-xh"}, {"--HELP"}, {"L", "-x"}, {"L", "--bogus"}, {"L", "---x"}, {"--=x"},
	{"--no-shared", "L"}, {"-n=true", "L"}, {"-s1", "L"}, {"-é"}, {"--é"},
	{"L", "--worker"}, {"L", "--worker="}, {"L", "--worker", "-x", "--", "c"}, {"L", "--worker", "--store", "--", "c"},
	{"L", "--worker", "-"}, {"L", "--worker", "--"}, {"L", "--worker=--"}, {"--home", "-", "L"}, {"--home"}, {"--home", "", "L"},
	{"L", "--worker", "w", "--worker", "v", "--", "c"}, {"L", "--home=a", "--home=b", "--", "c"}, {"L", "--store=", "--", "c"},
	{"--ls"}, {"--ls", "--json"}, {"--ls", "L"}, {"L", "--ls", "--", "c"}, {"--ls", "--ls"}, {"--ls=false"}, {"--json=yes"},
	{"--shared=true", "--", "c"}, {"--shared=false", "L", "--", "c"}, {"L", "--nonblock=1", "--", "c"}, {"L", "--shared=maybe"},
}

// TestParseArgsLikeKong: parseArgs reads every command line as kong did.
func TestParseArgsLikeKong(t *testing.T) {
	unsetHome(t)
	for _, args := range parseCases {
		sameAsKong(t, args)
	}
	t.Setenv("ROSTER_HOME", "/env")
	sameAsKong(t, []string{"L", "--worker", "w", "--", "c"})
	sameAsKong(t, []string{"--home", "/h", "L", "--worker", "w", "--", "c"})
	t.Setenv("ROSTER_HOME", "")
	sameAsKong(t, []string{"L", "--worker", "w", "--", "c"})
}

// FuzzParseArgs: for any command line (arguments separated by newlines)
// parseArgs and kong agree. Only valid UTF-8: kong replaced bad bytes.
func FuzzParseArgs(f *testing.F) {
	for _, args := range parseCases {
		f.Add(strings.Join(args, "\n"))
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		unsetHome(t)
		sameAsKong(t, strings.Split(s, "\n"))
	})
}

// TestParseArgsKeepsBytes: an argument that is not UTF-8 reaches the
// command as it is (kong replaced its bad bytes).
func TestParseArgsKeepsBytes(t *testing.T) {
	o, err := parseArgs([]string{"L", "--store", "/s\xff", "--", "printf", "\xfe\xff"}, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if o.Store != "/s\xff" || !reflect.DeepEqual(o.Command, []string{"printf", "\xfe\xff"}) {
		t.Errorf("got store %q, command %q", o.Store, o.Command)
	}
}

// TestHelpTeachesEveryFlag: --help shows every flag, with its short form
// and placeholder, and both forms of the command line.
func TestHelpTeachesEveryFlag(t *testing.T) {
	var b bytes.Buffer
	usage(&b)
	help := b.String()
	for _, want := range []string{"Usage: roster-lock NAME", "roster-lock --ls", "roster-lock(1)"} {
		if !strings.Contains(help, want) {
			t.Errorf("--help lacks %q:\n%s", want, help)
		}
	}
	for _, d := range flagDefs {
		col := "--" + d.long
		if d.value != "" {
			col += "=" + d.value
		}
		if d.short != 0 {
			col = "-" + string(d.short) + ", " + col
		}
		if !strings.Contains(help, "  "+col+" ") {
			t.Errorf("--help does not show %q:\n%s", col, help)
		}
	}
	for _, l := range strings.Split(help, "\n") {
		if len(l) > 80 {
			t.Errorf("--help line longer than 80 columns: %q", l)
		}
	}
}

// TestDumpGrammarListsEveryFlag: ROSTER_DUMP_GRAMMAR's lines, which the
// man-page test checks against man/roster-lock.1, are the flag table's.
func TestDumpGrammarListsEveryFlag(t *testing.T) {
	var b bytes.Buffer
	dumpGrammar(&b)
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	want := []string{"roster-lock"}
	for _, d := range flagDefs {
		if d.long != "help" {
			want = append(want, "roster-lock\t--"+d.long)
		}
	}
	sort.Strings(lines)
	sort.Strings(want)
	if fmt.Sprint(lines) != fmt.Sprint(want) {
		t.Errorf("dump:\n%s\nwant the lines %q", b.String(), want)
	}
}
