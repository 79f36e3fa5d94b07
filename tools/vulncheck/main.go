// Command vulncheck reads `govulncheck -format json` on stdin and sorts
// what the code actually reaches (symbol-level findings) into two kinds:
// vulnerabilities in a module the project requires, which fail `make
// lint` (bump the module), and vulnerabilities in the Go standard library,
// which only a newer Go toolchain fixes and which fail only with -stdlib
// fail (the default is to warn, naming the Go release that fixes them).
// Findings in code the project imports but never calls are counted, not
// failed, as govulncheck's own text output does.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

type message struct {
	Config *struct {
		GoVersion string `json:"go_version"`
		DB        string `json:"db"`
	} `json:"config"`
	OSV *struct {
		ID      string `json:"id"`
		Summary string `json:"summary"`
	} `json:"osv"`
	Finding *struct {
		OSV   string `json:"osv"`
		Fixed string `json:"fixed_version"`
		Trace []struct {
			Module   string `json:"module"`
			Version  string `json:"version"`
			Package  string `json:"package"`
			Function string `json:"function"`
		} `json:"trace"`
	} `json:"finding"`
}

type hit struct{ id, module, version, fixed string }

func main() {
	stdlib := flag.String("stdlib", "warn", "what a standard-library finding does: warn or fail")
	flag.Parse()
	if *stdlib != "warn" && *stdlib != "fail" {
		fmt.Fprintln(os.Stderr, "vulncheck: error: -stdlib must be warn or fail")
		os.Exit(2)
	}
	code, err := run(os.Stdin, os.Stdout, *stdlib == "fail")
	if err != nil {
		fmt.Fprintln(os.Stderr, "vulncheck: error:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(r io.Reader, w io.Writer, stdlibFails bool) (int, error) {
	dec := json.NewDecoder(r)
	summary := map[string]string{}
	called := map[string]hit{}
	uncalled := map[string]bool{}
	goVersion, db := "", ""
	for {
		var m message
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return 1, fmt.Errorf("reading govulncheck's output: %w", err)
		}
		switch {
		case m.Config != nil:
			goVersion, db = m.Config.GoVersion, m.Config.DB
		case m.OSV != nil:
			summary[m.OSV.ID] = m.OSV.Summary
		case m.Finding != nil && len(m.Finding.Trace) > 0:
			f := m.Finding
			if f.Trace[0].Function == "" {
				uncalled[f.OSV] = true
				continue
			}
			called[f.OSV] = hit{f.OSV, f.Trace[0].Module, f.Trace[0].Version, f.Fixed}
		}
	}
	if goVersion == "" {
		return 1, errors.New("no config message: is this govulncheck -format json output?")
	}
	var mods, std []hit
	for id, h := range called {
		delete(uncalled, id)
		if h.module == "stdlib" {
			std = append(std, h)
		} else {
			mods = append(mods, h)
		}
	}
	byID := func(s []hit) { sort.Slice(s, func(i, j int) bool { return s[i].id < s[j].id }) }
	byID(mods)
	byID(std)
	fmt.Fprintf(w, "govulncheck: %s, database %s: %d reached in modules, %d in the standard library, %d more imported but not reached\n",
		goVersion, db, len(mods), len(std), len(uncalled))
	for _, h := range mods {
		fmt.Fprintf(w, "  %s %s@%s (fixed in %s): %s\n", h.id, h.module, h.version, h.fixed, summary[h.id])
	}
	fixed := ""
	for _, h := range std {
		fmt.Fprintf(w, "  %s stdlib %s (fixed in go%s): %s\n", h.id, goVersion, strings.TrimPrefix(h.fixed, "v"), summary[h.id])
		if versionLess(fixed, h.fixed) {
			fixed = h.fixed
		}
	}
	code := 0
	if len(mods) > 0 {
		fmt.Fprintln(w, "govulncheck: error: bump the modules above (go get MODULE@FIXED)")
		code = 1
	}
	if len(std) > 0 {
		word := "warning"
		if stdlibFails {
			word, code = "error", 1
		}
		fmt.Fprintf(w, "govulncheck: %s: the toolchain %s has the %d standard-library vulnerabilities above; build with go%s or newer\n",
			word, goVersion, len(std), strings.TrimPrefix(fixed, "v"))
	}
	return code, nil
}

// versionLess compares "v1.26.9"-style versions numerically ("" is least).
func versionLess(a, b string) bool {
	pa, pb := strings.Split(strings.TrimPrefix(a, "v"), "."), strings.Split(strings.TrimPrefix(b, "v"), ".")
	if a == "" {
		return b != ""
	}
	for i := 0; i < len(pa) && i < len(pb); i++ {
		var x, y int
		fmt.Sscan(pa[i], &x)
		fmt.Sscan(pb[i], &y)
		if x != y {
			return x < y
		}
	}
	return len(pa) < len(pb)
}
