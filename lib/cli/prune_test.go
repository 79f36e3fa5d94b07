package cli

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

// wide is a grammar with what roster's programs use: Globals, an embed of
// commands, nested commands, aliases, a hidden command, a two-word command
// named by kong, xor flags, enums and required arguments.
type wide struct {
	Globals
	Verbose  bool     `short:"v" help:"Say more."`
	Tag      string   `placeholder:"T" help:"A top-level flag with a value."`
	Group    groupCmd `cmd:"" help:"A group of verbs."`
	MoreCmds `embed:""`
}

type MoreCmds struct {
	Echo     echoCmd  `cmd:"" aliases:"say,print" help:"Print the words."`
	Secret   echoCmd  `cmd:"" hidden:"" help:"Hidden."`
	MakeItSo echoCmd  `cmd:"" help:"A two-word command."`
	Picky    pickyCmd `cmd:"" name:"picky" help:"Flags with rules."`
}

type groupCmd struct {
	Add echoCmd `cmd:"" help:"Add one."`
	Rm  echoCmd `cmd:"" help:"Remove one."`
}

type echoCmd struct {
	Words []string `arg:"" help:"Words."`
	Upper bool     `short:"u" help:"Upper case."`
}

func (c *echoCmd) Run(g *Globals, env *Env) error {
	s := strings.Join(c.Words, " ")
	if c.Upper {
		s = strings.ToUpper(s)
	}
	fmt.Fprintf(env.Stdout, "%s (home %s)\n", s, g.Home)
	return nil
}

type pickyCmd struct {
	Color string `enum:"red,blue" default:"red" help:"A color."`
	A     bool   `xor:"ab" help:"A."`
	B     bool   `xor:"ab" help:"B."`
	N     int    `required:"" help:"A number."`
}

func (c *pickyCmd) Run(env *Env) error {
	fmt.Fprintf(env.Stdout, "%s %v %v %d\n", c.Color, c.A, c.B, c.N)
	return nil
}

func mainOut(g any, args []string, opts ...kong.Option) string {
	var out, errb bytes.Buffer
	env := &Env{Name: "roster-x", Stdout: &out, Stderr: &errb, Stdin: strings.NewReader(""), Ctx: context.Background()}
	code := MainEnv(env, g, append([]string(nil), args...), opts...)
	return fmt.Sprintf("exit %d\nstdout:\n%sstderr:\n%s", code, out.String(), errb.String())
}

// TestPrunedGrammarAnswersLikeTheWholeGrammar: whatever the arguments,
// Main's output and exit code with the pruned grammar are those of the
// whole grammar (kong.Bind() turns pruning off).
func TestPrunedGrammarAnswersLikeTheWholeGrammar(t *testing.T) {
	var vs [][]string
	paths := [][]string{{"group"}, {"group", "add"}, {"group", "rm"}, {"echo"}, {"say"}, {"print"},
		{"secret"}, {"make-it-so"}, {"picky"}}
	for _, p := range paths {
		with := func(extra ...string) []string { return append(append([]string(nil), p...), extra...) }
		vs = append(vs, with(), with("--help"), with("-h"), with("a", "b"), with("-u", "a"), with("--bogus"),
			with("bogus"), with("--upper=maybe", "a"), with("--version"), with("--home", "/h", "a"),
			with("-v", "a"), with("--tag", "t", "a"), with("--tag"),
			with("--color", "green", "--n", "1"), with("--a", "--b", "--n", "1"), with("--n", "x"),
			with("--n", "3"), with("--color=blue", "--b", "--n=4"),
			append([]string{"--home", "/h"}, with("z")...), append([]string{"--home=/h"}, with("z")...),
			append([]string{"--version"}, p...), append([]string{"-v"}, with("z")...))
	}
	vs = append(vs, []string{}, []string{"--help"}, []string{"--version"}, []string{"--home", "/h", "--version"},
		[]string{"--home=/h", "--version"}, []string{"--home"}, []string{"--home", "--version"},
		[]string{"ech"}, []string{"makeitso"}, []string{"--version", "ech"}, []string{"--", "echo"}, []string{""})
	for _, args := range vs {
		pruned := mainOut(&wide{}, args)
		whole := mainOut(&wide{}, args, kong.Bind())
		if pruned != whole {
			t.Errorf("roster-x %q:\npruned: %s\nwhole:  %s", args, pruned, whole)
		}
	}
}

func TestLeadingVerb(t *testing.T) {
	for _, c := range []struct {
		args    []string
		verb    string
		version bool
		ok      bool
	}{
		{[]string{"add", "x"}, "add", false, true},
		{[]string{"--home", "/h", "add"}, "add", false, true},
		{[]string{"--home=/h", "--version", "add"}, "add", true, true},
		{[]string{"--version"}, "", true, true},
		{[]string{"--home", "/h", "--version"}, "", true, true},
		{[]string{}, "", false, false},
		{[]string{"--help", "add"}, "", false, false},
		{[]string{"-h"}, "", false, false},
		{[]string{"--home"}, "", false, false},
		{[]string{"--home", "--version"}, "", false, false},
		{[]string{"--", "add"}, "", false, false},
		{[]string{"", "add"}, "", false, false},
	} {
		verb, version, ok := leadingVerb(c.args)
		if verb != c.verb || version != c.version || ok != c.ok {
			t.Errorf("leadingVerb(%q) = %q, %v, %v; want %q, %v, %v", c.args, verb, version, ok, c.verb, c.version, c.ok)
		}
	}
}

type withHook struct {
	Globals
	Echo echoCmd `cmd:""`
}

func (*withHook) AfterApply() error { return nil }

type withArg struct {
	Globals
	Name string  `arg:""`
	Echo echoCmd `cmd:""`
}

type withKongTag struct {
	Globals
	Echo echoCmd `kong:"cmd"`
}

type withDefault struct {
	Globals
	Echo echoCmd `cmd:"" default:"withargs"`
}

type withoutGlobals struct {
	Echo echoCmd `cmd:""`
}

type prefixedEmbed struct {
	Globals
	More MoreCmds `embed:"" prefix:"m-"`
}

// TestPruneKeepsOnlyTheVerb: the pruned grammar has the top level's flags
// and the one command; a verb that names no command, or a grammar whose
// copy could differ, gets nil (the whole grammar).
func TestPruneKeepsOnlyTheVerb(t *testing.T) {
	pg, g := pruneGrammar(&wide{}, "say")
	if pg == nil || g == nil {
		t.Fatal("wide grammar, verb say: not pruned")
	}
	var names []string
	st := reflect.TypeOf(pg).Elem()
	for i := 0; i < st.NumField(); i++ {
		names = append(names, st.Field(i).Name)
	}
	if got := strings.Join(names, " "); got != "Globals Verbose Tag Echo" {
		t.Errorf("pruned fields = %q, want %q", got, "Globals Verbose Tag Echo")
	}
	if pg, _ := pruneGrammar(&wide{}, ""); pg == nil || reflect.TypeOf(pg).Elem().NumField() != 3 {
		t.Errorf("no verb: want the top level's three flag fields, got %v", pg)
	}
	for _, c := range []struct {
		name    string
		grammar any
		verb    string
	}{
		{"unknown verb", &wide{}, "ech"},
		{"two-word field without name tag", &wide{}, "makeitso"},
		{"method on the top level", &withHook{}, "echo"},
		{"positional argument at the top level", &withArg{}, "echo"},
		{"kong:\"...\" tag", &withKongTag{}, "echo"},
		{"default command", &withDefault{}, "echo"},
		{"no Globals", &withoutGlobals{}, "echo"},
		{"embed with a prefix", &prefixedEmbed{}, "echo"},
		{"not a pointer", wide{}, "echo"},
	} {
		if pg, _ := pruneGrammar(c.grammar, c.verb); pg != nil {
			t.Errorf("%s: pruned, want the whole grammar", c.name)
		}
	}
}
