// Package testbin builds the suite's programs for the tests that run them
// as real processes (the end-to-end tests of cmd/roster and
// cmd/roster-dispatch, roster-box's and roster-lock's own tests), the way
// the Makefile builds them: every program pure Go with CGO_ENABLED=0, and
// roster-box with cgo and -tags seccomp, linked statically (BoxTags,
// BoxLDFlags). One place, so that a change to how the suite is built is
// made once.
package testbin

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Box is the one program built with cgo and the seccomp tag.
const Box = "roster-box"

// BoxTags and BoxLDFlags are how the Makefile builds Box (BOX_TAGS,
// BOX_LDFLAGS): libseccomp and libc linked in statically.
const (
	BoxTags    = "seccomp netgo osusergo"
	BoxLDFlags = "-linkmode external -extldflags -static"
)

// Root is the repository's root: the nearest folder above the working
// directory (a test's package folder) that holds go.mod.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = up
	}
}

// Programs lists every program of the suite: the folders under cmd/.
func Programs() ([]string, error) {
	root, err := Root()
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(filepath.Join(root, "cmd"))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// Build builds the named programs ("roster-lock"; none: all of them) into
// dir: the pure ones in one `go build`, roster-box in another.
func Build(dir string, programs ...string) error {
	root, err := Root()
	if err != nil {
		return err
	}
	if len(programs) == 0 {
		if programs, err = Programs(); err != nil {
			return err
		}
	}
	var pure []string
	box := false
	for _, p := range programs {
		if p == Box {
			box = true
		} else {
			pure = append(pure, "./cmd/"+p)
		}
	}
	if len(pure) > 0 {
		if err := goBuild(root, "CGO_ENABLED=0", append([]string{"-o", dir + "/"}, pure...)); err != nil {
			return err
		}
	}
	if box {
		return goBuild(root, "CGO_ENABLED=1", []string{"-tags", BoxTags, "-ldflags", BoxLDFlags, "-o", filepath.Join(dir, Box), "./cmd/" + Box})
	}
	return nil
}

func goBuild(root, cgo string, args []string) error {
	cmd := exec.Command("go", append([]string{"build"}, args...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), cgo)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %v: %v\n%s", args, err, out)
	}
	return nil
}

// Temp builds the programs into a new temporary folder, for a TestMain:
// it returns the folder and a function that removes it. A failed build
// is reported on stderr and exits the test binary with status 1, since no
// test of the package could run without the programs.
func Temp(programs ...string) (dir string, remove func()) {
	dir, err := os.MkdirTemp("", "roster-testbin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "testbin:", err)
		os.Exit(1)
	}
	if err := Build(dir, programs...); err != nil {
		fmt.Fprintln(os.Stderr, "testbin: building the suite:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	return dir, func() { os.RemoveAll(dir) }
}
