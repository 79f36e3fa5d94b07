package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/roster-sh/roster/lib/cli"
)

// TestPrunedGrammarAnswersLikeTheWholeGrammar pins lib/cli's start-up cut
// on roster-task's real grammars: cli.Main builds only the command the
// arguments name (cli/prune.go), and for every command path, every flag
// and a set of malformed invocations, the exit code, stdout and stderr
// must be what the whole grammar gives (an extra kong option turns the
// pruning off). Invocations that parse are skipped: they would run.
func TestPrunedGrammarAnswersLikeTheWholeGrammar(t *testing.T) {
	for _, g := range []struct {
		name string
		new  func() any
	}{{"host", func() any { return &CLI{} }}, {"box", func() any { return &InboxCLI{} }}} {
		t.Run(g.name, func(t *testing.T) {
			vectors := invocations(t, g.new())
			compared := 0
			for _, args := range vectors {
				if parses(g.new(), args) {
					continue
				}
				compared++
				pc, pout, perr := runMain(g.new(), args)
				fc, fout, ferr := runMain(g.new(), args, kong.Bind())
				if pc != fc || pout != fout || perr != ferr {
					t.Errorf("roster-task %s:\npruned: exit %d\n%s%s\nwhole:  exit %d\n%s%s",
						strings.Join(args, " "), pc, pout, perr, fc, fout, ferr)
				}
			}
			if compared < 50 {
				t.Fatalf("only %d invocations compared", compared)
			}
			t.Logf("%d invocations compared", compared)
		})
	}
}

func runMain(grammar any, args []string, opts ...kong.Option) (int, string, string) {
	var out, errb bytes.Buffer
	env := &cli.Env{Name: "roster-task", Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Ctx: context.Background()}
	code := cli.MainEnv(env, grammar, append([]string(nil), args...), opts...)
	return code, out.String(), errb.String()
}

// parses reports whether args parse without an exit (help, version,
// usage error): then cli.Main would run the command.
func parses(grammar any, args []string) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	p, err := kong.New(grammar, kong.Name("roster-task"), kong.Writers(io.Discard, io.Discard),
		kong.Exit(func(int) { panic("exit") }), kong.Vars{"version": "v"})
	if err != nil {
		panic(err)
	}
	_, err = p.Parse(args)
	return err == nil
}

// invocations lists, for every command path (hidden ones too), the path
// alone and with --help, -h, an unknown flag, stray words, each flag
// without its value, with a bad value and repeated, and --version and
// --home in front.
func invocations(t *testing.T, grammar any) [][]string {
	p, err := kong.New(grammar, kong.Name("roster-task"))
	if err != nil {
		t.Fatal(err)
	}
	vs := [][]string{{}, {"--help"}, {"-h"}, {"--version"}, {"--home", "/nonexistent", "--version"},
		{"--home=/nonexistent", "--version"}, {"--version", "--help"}, {"bogus"}, {"ad"}, {"--home"},
		{"--home", "--version"}, {"--bogus", "add"}, {"--version", "bogus"}, {"--", "add"}}
	var walk func(n *kong.Node, path []string)
	walk = func(n *kong.Node, path []string) {
		with := func(extra ...string) []string { return append(append([]string(nil), path...), extra...) }
		if len(path) > 0 {
			vs = append(vs, with(), with("--help"), with("-h"), with("--bogus"), with("x", "y", "z"),
				with("x", "y", "z", "--help"), with("bogus"), with("--version"), with("-"),
				append([]string{"--home", "/nonexistent"}, with("--help")...),
				append([]string{"--version"}, path...), append([]string{"--home=/nonexistent"}, with("x")...))
			for _, f := range n.Flags {
				vs = append(vs, with("--"+f.Name), with("--"+f.Name+"=not-a-value"), with("x", "--"+f.Name),
					with("--"+f.Name, "1", "--"+f.Name, "2"), with("--no-"+f.Name))
				if f.Short != 0 {
					vs = append(vs, with("-"+string(f.Short)))
				}
			}
		}
		for _, c := range n.Children {
			if c.Type == kong.CommandNode {
				walk(c, append(append([]string(nil), path...), c.Name))
			}
		}
	}
	walk(p.Model.Node, nil)
	return vs
}
