package cli

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/roster-sh/roster/lib/errs"
)

type grammar struct {
	Globals
	Ok   okCmd   `cmd:"" help:"succeed"`
	Fail failCmd `cmd:"" help:"fail with a kind"`
}

type okCmd struct {
	Name string `arg:""`
}

func (c *okCmd) Run(g *Globals, env *Env) error {
	fmt.Fprintf(env.Stdout, "%s %s\n", c.Name, g.Home)
	return nil
}

type failCmd struct {
	Kind string `arg:""`
}

func (c *failCmd) Run(env *Env) error {
	switch c.Kind {
	case "usage":
		return errs.New(errs.ErrUsage, "bad thing")
	case "nohome":
		return errs.WithHint(fmt.Errorf("no home: %w", errs.ErrNoHome), "run roster init")
	case "busy":
		return fmt.Errorf("x: %w", errs.ErrBusy)
	case "notfound":
		return errs.New(errs.ErrNotFound, `task "x": not found`)
	case "conflict":
		return fmt.Errorf("x: %w", errs.ErrConflict)
	case "refused":
		return fmt.Errorf("x: %w", errs.ErrRefused)
	case "ambiguous":
		return &errs.Candidates{What: "run", Prefix: "2026", IDs: []string{"a", "b"}}
	case "exit":
		return &errs.Exit{Code: 42}
	}
	return errors.New("plain failure")
}

func run(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := MainEnv(&Env{Name: "roster-x", Stdout: &out, Stderr: &errb, Stdin: strings.NewReader("")}, &grammar{}, args)
	return code, out.String(), errb.String()
}

func TestExitCodeTable(t *testing.T) {
	for _, c := range []struct {
		kind string
		code int
	}{
		{"usage", 2}, {"nohome", 10}, {"busy", 11}, {"notfound", 12}, {"conflict", 13},
		{"refused", 14}, {"ambiguous", 2}, {"exit", 42}, {"other", 1},
	} {
		code, _, _ := run("fail", c.kind)
		if code != c.code {
			t.Errorf("%s: exit %d, want %d", c.kind, code, c.code)
		}
	}
}

func TestErrorAndHintLines(t *testing.T) {
	_, _, stderr := run("fail", "nohome")
	if !strings.Contains(stderr, "roster-x: error: no home: no home\n") || !strings.Contains(stderr, "roster-x: hint: run roster init\n") {
		t.Errorf("stderr = %q", stderr)
	}
	_, _, stderr = run("fail", "ambiguous")
	if !strings.Contains(stderr, "hint: candidate a") || !strings.Contains(stderr, "hint: candidate b") {
		t.Errorf("candidates not listed: %q", stderr)
	}
	_, _, stderr = run("fail", "exit")
	if stderr != "" {
		t.Errorf("errs.Exit printed %q", stderr)
	}
}

func TestUsageErrorsAreExit2(t *testing.T) {
	for _, args := range [][]string{{"nosuch"}, {"ok"}, {"ok", "a", "--bogus"}, {}} {
		code, _, stderr := run(args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
		if !strings.Contains(stderr, "roster-x: error:") {
			t.Errorf("%v: stderr %q lacks the error line", args, stderr)
		}
	}
}

func TestHelpAndVersionExit0(t *testing.T) {
	code, out, _ := run("--help")
	if code != 0 || !strings.Contains(out, "Usage: roster-x") {
		t.Errorf("--help: exit %d, out %q", code, out)
	}
	code, out, _ = run("--version")
	if code != 0 || !strings.HasPrefix(out, "roster-x ") {
		t.Errorf("--version: exit %d, out %q", code, out)
	}
}

func TestGlobalsBound(t *testing.T) {
	code, out, _ := run("ok", "n", "--home", "/h")
	if code != 0 || out != "n /h\n" {
		t.Errorf("exit %d out %q", code, out)
	}
}

func TestDumpGrammar(t *testing.T) {
	t.Setenv("ROSTER_DUMP_GRAMMAR", "1")
	code, out, _ := run()
	if code != 0 {
		t.Fatal(code)
	}
	for _, want := range []string{"roster-x\t--home", "roster-x ok", "roster-x fail"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("dump lacks %q:\n%s", want, out)
		}
	}
}

// `PROG help [VERB]` is `PROG [VERB] --help` in a program with commands;
// a grammar without commands keeps "help" as its argument.
func TestHelpVerb(t *testing.T) {
	code, out, errb := run("help")
	if code != 0 || !strings.Contains(out, "Usage: roster-x <command>") {
		t.Fatalf("help: exit %d\n%s%s", code, out, errb)
	}
	code, out, errb = run("help", "fail")
	if code != 0 || !strings.Contains(out, "Usage: roster-x fail <kind>") {
		t.Fatalf("help fail: exit %d\n%s%s", code, out, errb)
	}
	var o, e bytes.Buffer
	code = MainEnv(&Env{Name: "roster-y", Stdout: &o, Stderr: &e, Stdin: strings.NewReader("")}, &flat{}, []string{"help"})
	if code != 0 || o.String() != "arg help\n" {
		t.Fatalf("no commands: exit %d, %q %q", code, o.String(), e.String())
	}
}

type flat struct {
	Globals
	Name string `arg:""`
}

func (f *flat) Run(env *Env) error {
	fmt.Fprintf(env.Stdout, "arg %s\n", f.Name)
	return nil
}
