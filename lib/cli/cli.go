package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/alecthomas/kong"

	"github.com/roster-sh/roster/lib/cli/out"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
)

// Version is set at build time (-ldflags "-X .../lib/cli.Version=...").
var Version = "dev"

// Globals are the flags every program takes. Embed it in a grammar.
type Globals struct {
	Home    string           `name:"home" env:"ROSTER_HOME" default:"." placeholder:"DIR" help:"The roster home (env ROSTER_HOME; default: the current directory)."`
	Version kong.VersionFlag `name:"version" help:"Print the version and exit."`
}

func (g *Globals) globals() *Globals { return g }

// OpenHome opens the home named by --home, refusing one without data/.
func (g *Globals) OpenHome() (home.Home, error) { return home.Open(g.Home) }

type hasGlobals interface{ globals() *Globals }

// Env is what a Run method writes to (lib/cli/out).
type Env = out.Env

// ExitBusy is errs.ExitBusy, for cmd/roster-box until it names the table
// in lib/errs.
const ExitBusy = errs.ExitBusy

type exitPanic struct{ code int }

// Main parses args (without the program name) against grammar, runs the
// chosen command and returns the exit code. Extra kong options may be given.
func Main(name string, grammar any, args []string, opts ...kong.Option) (code int) {
	return MainEnv(&Env{Name: name, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Ctx: context.Background()}, grammar, args, opts...)
}

// MainEnv is Main with explicit streams (tests). Without extra options,
// kong is given only the part of the grammar the arguments can reach
// (prune.go); extra options turn that off, as they may add commands.
func MainEnv(env *Env, grammar any, args []string, opts ...kong.Option) (code int) {
	name := env.Name
	base := []kong.Option{
		kong.Name(name),
		kong.Writers(env.Stdout, env.Stderr),
		kong.Exit(func(c int) { panic(exitPanic{c}) }),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true, NoExpandSubcommands: false}),
		kong.Bind(env),
		kong.BindTo(env.Ctx, (*context.Context)(nil)),
		kong.TypeMapper(reflect.TypeFor[time.Duration](), durationMapper),
	}
	var globals *Globals
	if g, ok := grammar.(hasGlobals); ok {
		globals = g.globals()
	}
	// `PROG help [VERB...]` is `PROG [VERB...] --help`, as the roster
	// wrapper and git take it, in a program with commands and none named
	// help.
	if len(args) > 0 && args[0] == "help" && helpVerbFree(grammar) {
		args = append(append([]string{}, args[1:]...), "--help")
	}
	dump := os.Getenv("ROSTER_DUMP_GRAMMAR") == "1"
	if !dump && len(opts) == 0 {
		// Only the part of the grammar these arguments can reach (prune.go).
		if verb, version, ok := leadingVerb(args); ok && (verb != "" || version) {
			if pg, pgl := pruneGrammar(grammar, verb); pg != nil {
				grammar, globals = pg, pgl
			}
		}
	}
	if globals != nil {
		base = append(base, kong.Bind(globals))
	}
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(exitPanic); ok {
				code = e.code
				if code == 80 || (code != 0 && code != 1) {
					code = errs.ExitUsage
				}
				return
			}
			panic(r)
		}
	}()
	parser, err := kong.New(grammar, append(base, opts...)...)
	if err != nil {
		panic(err) // a grammar bug, not a user error
	}
	// --version's text, set after the model is built: kong.New
	// interpolates every variable it holds into every flag and argument
	// (a regexp pass each); the hook that prints it reads it at parse time.
	kong.Vars{"version": name + " " + Version}.Apply(parser)
	if dump {
		DumpGrammar(env.Stdout, parser.Model.Node)
		return 0
	}
	kctx, err := parser.Parse(args)
	if err != nil {
		env.Error("%s", err)
		env.Hint("see '%s --help'", commandPath(name, kctx))
		return errs.ExitUsage
	}
	err = kctx.Run()
	return Report(env, err)
}

func commandPath(name string, kctx *kong.Context) string {
	if kctx == nil {
		return name
	}
	if s := kctx.Command(); s != "" {
		var words []string
		for _, w := range strings.Fields(s) {
			if !strings.HasPrefix(w, "<") {
				words = append(words, w)
			}
		}
		return name + " " + strings.Join(words, " ")
	}
	return name
}

// DumpGrammar prints every command path and its flags, one per line
// ("roster-task template add\t--cron"), for the man-page test.
func DumpGrammar(w io.Writer, n *kong.Node) {
	var lines []string
	var walk func(n *kong.Node, path string)
	walk = func(n *kong.Node, path string) {
		if n.Hidden {
			return
		}
		lines = append(lines, path)
		for _, f := range n.Flags {
			if f.Hidden || f.Name == "help" {
				continue
			}
			lines = append(lines, path+"\t--"+f.Name)
		}
		for _, c := range n.Children {
			if c.Type == kong.CommandNode {
				walk(c, path+" "+c.Name)
			}
		}
	}
	walk(n, n.Name)
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}

// helpVerbFree reports whether grammar's top level has commands and none
// of them is called help.
func helpVerbFree(grammar any) bool {
	v := reflect.ValueOf(grammar)
	for v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return false
	}
	cmds := false
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		if _, ok := f.Tag.Lookup("cmd"); !ok {
			continue
		}
		cmds = true
		if f.Tag.Get("name") == "help" || (f.Tag.Get("name") == "" && strings.EqualFold(f.Name, "help")) {
			return false
		}
	}
	return cmds
}

// durationMapper reads every time.Duration flag as docs/layout.md writes
// durations (home.ParseDuration: s, m, h and d; a bare number other than
// 0 is refused), not as Go's time.ParseDuration alone.
var durationMapper = kong.MapperFunc(func(ctx *kong.DecodeContext, target reflect.Value) error {
	var s string
	if err := ctx.Scan.PopValueInto("duration", &s); err != nil {
		return err
	}
	d, err := home.ParseDuration(s)
	if err != nil {
		return err
	}
	target.SetInt(int64(d))
	return nil
})
