// Package docs holds the design pages; these tests keep their citations
// true: a design page named in a Go file, a testscript or a shell script
// (layout.md, docs/store.md, ...: the names of the project's design
// documents, with or without docs/) is a page in this folder, and every
// relative link in a page or the README names a file that exists.
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	cited = regexp.MustCompile(`\b(layout|tools|tasks|dispatch-and-box|store|gateway|agents|quality|style)\.md\b`)
	link  = regexp.MustCompile(`\]\(([^)#:]+)(#[^)]*)?\)`)
)

func TestCitedDocsExist(t *testing.T) {
	root := ".."
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (strings.HasPrefix(n, ".") || n == "testdata" && !strings.Contains(p, "script")) {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(p) {
		case ".go", ".txtar", ".sh":
		default:
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, c := range cited.FindAllString(string(data), -1) {
			if _, err := os.Stat(c); err != nil {
				t.Errorf("%s cites %s, which is not a page of docs/", p, c)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestPageLinksResolve(t *testing.T) {
	pages, _ := filepath.Glob("*.md")
	pages = append(pages, "../README.md")
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(data), -1) {
			target := filepath.Join(filepath.Dir(page), m[1])
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s links to %s, which does not exist", page, m[1])
			}
		}
	}
}
