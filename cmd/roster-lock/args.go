package main

// roster-lock reads its own command line, without kong: kong builds a
// model of the grammar by reflection at every start, and its package
// initialisation alone (a regexp compiled, go/doc and encoding/json
// linked in) was a quarter of the instructions of an uncontended
// `roster-lock NAME --worker W -- true`, the run benchmarked against
// flock(1) (bench/lock.sh). The grammar is the one kong read before
// (TestParseArgsLikeKong, FuzzParseArgs compare the two, kong linked into
// the test only): long flags as --flag VALUE or --flag=VALUE, a switch
// also as --flag=true|false (1, yes, 0, no), short flags bundled (-sn,
// -w5), a repeated flag's last value winning; NAME is the first word that
// is not a flag, COMMAND starts at the next one (flags after it are the
// command's) or after a --; a -- before NAME makes the next word NAME
// even if it starts with a dash. One difference, on purpose: an argument
// that is not valid UTF-8 is passed on as it is (kong replaced its bad
// bytes, a command's arguments included).

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/roster-sh/roster/lib/errs"
)

// opts is the parsed command line.
type opts struct {
	Home             string
	Name             string
	Command          []string
	Shared           bool
	Nonblock         bool
	Wait             time.Duration
	WaitSet          bool // --wait given (0 is a try, like --nonblock)
	ConflictExitCode int
	Worker           string
	Store            string
	Ls               bool
	JSON             bool

	show string // "help" or "version": the first of them given
}

// flagDef is one flag: its long and short names, its value's placeholder
// ("" for a switch) and its line of help.
type flagDef struct {
	long  string
	short byte
	value string
	help  string
}

var flagDefs = []flagDef{
	{"help", 'h', "", "Show this help."},
	{"home", 0, "DIR", "The roster home (env ROSTER_HOME; default: the current directory)."},
	{"version", 0, "", "Print the version and exit."},
	{"shared", 's', "", "Take the lock shared: shared holders coexist, an exclusive one excludes them all."},
	{"nonblock", 'n', "", "Fail at once with exit 11 if the lock is held."},
	{"wait", 'w', "DUR", "Give up with exit 11 after DUR (300ms, 5s, 2m; a bare number is seconds). Default: wait forever."},
	{"conflict-exit-code", 'E', "N", "Exit with N instead of 11 when the lock stays busy."},
	{"worker", 0, "W", "Use worker W's lock folder, data/workers/W/locks."},
	{"store", 0, "DIR", "Use DIR/.locks; a worker's own store means --worker. Default inside a box: $HOME/store."},
	{"ls", 0, "", "List the lock files in the folder and who holds them."},
	{"json", 0, "", "With --ls: print JSON Lines."},
}

// parseArgs reads the arguments (without the program name); getenv looks
// ROSTER_HOME up (os.LookupEnv). An error is a usage error (exit 2).
func parseArgs(args []string, getenv func(string) (string, bool)) (*opts, error) {
	o := &opts{Home: ".", ConflictExitCode: errs.ExitBusy}
	if h, ok := getenv("ROSTER_HOME"); ok {
		o.Home = h
	}
	var named, afterDashes bool
	given := map[string]bool{}
	r := &argv{args: args}
	for ; r.i < len(args); r.i++ {
		a := args[r.i]
		isFlag := !afterDashes && len(a) > 1 && a[0] == '-'
		switch {
		case named && a == "--":
			o.Command = args[r.i+1:]
			r.i = len(args)
			continue
		case named && !isFlag:
			o.Command = args[r.i:]
			r.i = len(args)
			continue
		case a == "--" && !afterDashes:
			afterDashes = true
			continue
		case !isFlag:
			o.Name, named = a, true
			continue
		}
		if strings.HasPrefix(a, "--") {
			d, err := r.long(o, a)
			if err != nil {
				return nil, err
			}
			given[d.long] = true
			continue
		}
		if err := r.shorts(o, a, given); err != nil {
			return nil, err
		}
	}
	if o.show != "" {
		return o, nil // --help and --version win over the checks below
	}
	for _, pair := range [][2]string{{"nonblock", "wait"}, {"worker", "store"}} {
		if given[pair[0]] && given[pair[1]] {
			return nil, fmt.Errorf("--%s and --%s can't be used together", pair[0], pair[1])
		}
	}
	return o, nil
}

// argv is the arguments as parseArgs walks them; i is the one read.
type argv struct {
	args []string
	i    int
}

// value hands out the argument after the current one as flag d's value.
func (r *argv) value(d *flagDef) (string, error) {
	if r.i+1 >= len(r.args) {
		return "", fmt.Errorf("--%s: expected %s value but got nothing", d.long, kindOf(d))
	}
	v := r.args[r.i+1]
	if len(v) > 1 && v[0] == '-' {
		what := "short flag"
		if strings.HasPrefix(v, "--") {
			what = "long flag"
		}
		return "", fmt.Errorf("--%s: expected %s value but got %q (%s); perhaps try --%s=%q?", d.long, kindOf(d), v, what, d.long, v)
	}
	r.i++
	return v, nil
}

// long reads the long flag a (--flag, --flag=VALUE, or --flag VALUE) into
// o and returns its definition.
func (r *argv) long(o *opts, a string) (*flagDef, error) {
	name, value, hasValue := strings.Cut(a[2:], "=")
	d := longFlag(name)
	if d == nil {
		return nil, fmt.Errorf("unknown flag --%s", name)
	}
	var err error
	switch {
	case d.value == "" && hasValue:
		err = o.setSwitch(d, value)
	case d.value == "":
		err = o.setSwitch(d, "true")
	case hasValue:
		err = o.setValue(d, value)
	default:
		if value, err = r.value(d); err == nil {
			err = o.setValue(d, value)
		}
	}
	return d, err
}

// shorts reads the bundle of short flags a (-s, -sn, -w5, -w 5) into o,
// each named in given.
func (r *argv) shorts(o *opts, a string, given map[string]bool) error {
	for j := 1; j < len(a); j++ {
		d := shortFlag(a[j])
		if d == nil {
			c, _ := utf8.DecodeRuneInString(a[j:])
			return fmt.Errorf("unknown flag -%c", c)
		}
		given[d.long] = true
		if d.value == "" {
			if err := o.setSwitch(d, "true"); err != nil {
				return err
			}
			continue
		}
		value := a[j+1:] // -w5, -E75: the rest of the bundle
		if value == "" {
			var err error
			if value, err = r.value(d); err != nil {
				return err
			}
		}
		return o.setValue(d, value)
	}
	return nil
}

// kindOf names a flag's value in an error, as kong did.
func kindOf(d *flagDef) string {
	switch d.long {
	case "wait":
		return "duration"
	case "conflict-exit-code":
		return "int"
	}
	return "string"
}

func longFlag(name string) *flagDef {
	for i := range flagDefs {
		if flagDefs[i].long == name {
			return &flagDefs[i]
		}
	}
	return nil
}

func shortFlag(c byte) *flagDef {
	for i := range flagDefs {
		if flagDefs[i].short != 0 && flagDefs[i].short == c {
			return &flagDefs[i]
		}
	}
	return nil
}

// setSwitch sets a flag without a value; --flag=V takes V (in any case)
// as kong did.
func (o *opts) setSwitch(d *flagDef, v string) error {
	var on bool
	v = strings.ToLower(v)
	switch v {
	case "true", "1", "yes":
		on = true
	case "false", "0", "no":
	default:
		return fmt.Errorf("--%s: bool value must be true, 1, yes, false, 0 or no but got %q", d.long, v)
	}
	switch d.long {
	case "help", "version": // shown even when =false, as kong did
		if o.show == "" {
			o.show = d.long
		}
	case "shared":
		o.Shared = on
	case "nonblock":
		o.Nonblock = on
	case "ls":
		o.Ls = on
	case "json":
		o.JSON = on
	}
	return nil
}

func (o *opts) setValue(d *flagDef, v string) error {
	switch d.long {
	case "home":
		o.Home = v
	case "worker":
		o.Worker = v
	case "store":
		o.Store = v
	case "wait":
		w, err := parseWait(v)
		if err != nil {
			return fmt.Errorf("--wait: %w", err)
		}
		o.Wait, o.WaitSet = w, true
	case "conflict-exit-code":
		n, err := strconv.ParseInt(v, 0, 64)
		if err != nil {
			return fmt.Errorf("--conflict-exit-code: expected a valid 64 bit int but got %q", v)
		}
		o.ConflictExitCode = int(n)
	default:
		return errors.New("--" + d.long + ": takes no value") // not reached: the table says which take one
	}
	return nil
}

// usage is --help.
func usage(w io.Writer) {
	var b strings.Builder
	b.WriteString(`Usage: roster-lock NAME [flags] [--] COMMAND [ARG]...
       roster-lock --ls [--worker W | --store DIR] [--json]

Run COMMAND while holding the flock(2) lock NAME in a worker's lock folder,
or list the locks there (roster-lock(1)).

Arguments:
  NAME                The lock's name: a letter, digit or _, then up to 127 of
                      A-Z a-z 0-9 . _ - ('store' is the whole-store lock).
  COMMAND [ARG]...    The command to run while the lock is held: the first
                      word after NAME that is not a flag, or what follows --.

Flags:
`)
	cols := make([]string, len(flagDefs))
	width := 0
	for i, d := range flagDefs {
		c := "    "
		if d.short != 0 {
			c = "-" + string(d.short) + ", "
		}
		c += "--" + d.long
		if d.value != "" {
			c += "=" + d.value
		}
		cols[i] = c
		width = max(width, len(c))
	}
	for i, d := range flagDefs {
		pad := strings.Repeat(" ", width-len(cols[i])+4)
		for j, line := range wrap(d.help, 78-2-width-4) {
			if j > 0 {
				pad = strings.Repeat(" ", 2+width+4)
				b.WriteString(pad + line + "\n")
				continue
			}
			b.WriteString("  " + cols[i] + pad + line + "\n")
		}
	}
	io.WriteString(w, b.String())
}

// wrap breaks s into lines of at most n bytes at spaces.
func wrap(s string, n int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		if line != "" && len(line)+1+len(word) > n {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	return append(lines, line)
}

// dumpGrammar prints the command line's flags, one per line, as
// lib/cli.DumpGrammar does for the kong programs (ROSTER_DUMP_GRAMMAR=1:
// cmd/roster's man-page test).
func dumpGrammar(w io.Writer) {
	lines := []string{"roster-lock"}
	for _, d := range flagDefs {
		if d.long != "help" {
			lines = append(lines, "roster-lock\t--"+d.long)
		}
	}
	sort.Strings(lines)
	io.WriteString(w, strings.Join(lines, "\n")+"\n")
}
