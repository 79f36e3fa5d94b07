package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/roster-sh/roster/lib/errs"
)

// keyLines maps every key of a TOML document to the line it is written on.
// Keys are dotted paths; an element of an array of tables carries its index:
// "storage.store.min_free", "connection[1].mode". Used to name the line of a
// value that parses as TOML but is not a valid setting.
func keyLines(data []byte) map[string]int {
	lines := map[string]int{}
	count := map[string]int{}
	var p unstable.Parser
	p.Reset(data)
	prefix := ""
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			parts, line := keyParts(&p, e)
			name := strings.Join(parts, ".")
			if e.Kind == unstable.ArrayTable {
				i := count[name]
				count[name]++
				lines[name] = line
				name = name + "[" + strconv.Itoa(i) + "]"
			}
			prefix = name + "."
			lines[name] = line
		case unstable.KeyValue:
			parts, line := keyParts(&p, e)
			lines[prefix+strings.Join(parts, ".")] = line
		}
	}
	return lines
}

func keyParts(p *unstable.Parser, e *unstable.Node) ([]string, int) {
	var parts []string
	line := 0
	it := e.Key()
	for it.Next() {
		n := it.Node()
		parts = append(parts, string(n.Data))
		if line == 0 {
			line = p.Shape(n.Raw).Start.Line
		}
	}
	return parts, line
}

// specError is a setting that cannot be used: it names the file, the line
// and the key, and is refused (exit 14).
func specError(file string, line int, key, msg string) error {
	where := file
	if line > 0 {
		where += ":" + strconv.Itoa(line)
	}
	if key != "" {
		msg = key + ": " + msg
	}
	return errs.WithHint(errs.New(errs.ErrRefused, where+": "+msg),
		"fix the file by hand (the settings are described in roster(7)); nothing was changed")
}

// decodeError turns go-toml's errors into a specError naming the key and line.
func decodeError(file string, err error) error {
	var sm *toml.StrictMissingError
	if errors.As(err, &sm) && len(sm.Errors) > 0 {
		e := sm.Errors[0]
		line, _ := e.Position()
		return specError(file, line, "", fmt.Sprintf("unknown key %q", strings.Join(e.Key(), ".")))
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, _ := de.Position()
		msg := strings.TrimPrefix(de.Error(), "toml: ")
		msg = strings.ReplaceAll(msg, "TOML ", "")
		// go-toml names the Go field ("struct field config.orgFile.Cap");
		// a person wants the key, which Key() gives.
		if i := strings.Index(msg, " into struct field "); i >= 0 {
			if j := strings.LastIndex(msg, " of type "); j > i {
				got := strings.TrimPrefix(msg[:i], "cannot decode ")
				msg = "cannot use " + article(got) + got + " here (want " + goTypeWord(msg[j+len(" of type "):]) + ")"
			}
		}
		return specError(file, line, strings.Join(de.Key(), "."), msg)
	}
	return specError(file, 0, "", err.Error())
}

func goTypeWord(t string) string {
	switch {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "an integer"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case t == "string":
		return "a string"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "[]"):
		return "an array"
	}
	return "a table"
}

func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an "
	}
	return "a "
}
