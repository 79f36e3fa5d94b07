package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeMarker, alone on the line before a fenced block of README.md,
// marks the block as commands that must run as printed on a fresh home
// (README, "Working on roster"). A block whose lines start with "$ " is a
// transcript: those lines are the commands, the rest is their output;
// any other marked block is a script, every line a command.
const readmeMarker = "<!-- test: run -->"

// readmeBlock is one marked block: where it starts and its commands.
type readmeBlock struct {
	line     int
	commands []string
	headers  [][]string // a transcript's: per command, the table headers its printed output shows
}

// tableHeader matches a table's header line as the programs print it:
// two or more upper-case column names (RUN  WORKER  TASK ...).
var tableHeader = regexp.MustCompile(`^[A-Z][A-Z-]*( {2,}[A-Z][A-Z-]*)+$`)

// readmeBlocks extracts the marked blocks of a README. A command goes on
// over lines ending in a backslash and through a here-document to its
// delimiter; blank lines and comment lines of a script are skipped.
func readmeBlocks(text string) ([]readmeBlock, error) {
	lines := strings.Split(text, "\n")
	var out []readmeBlock
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != readmeMarker {
			continue
		}
		start := i + 1
		for start < len(lines) && strings.TrimSpace(lines[start]) == "" {
			start++
		}
		if start >= len(lines) || !strings.HasPrefix(strings.TrimSpace(lines[start]), "```") {
			return nil, fmt.Errorf("README.md:%d: %s is not followed by a fenced block", i+1, readmeMarker)
		}
		indent := lines[start][:len(lines[start])-len(strings.TrimLeft(lines[start], " "))]
		var body []string
		end := start + 1
		for ; end < len(lines) && strings.TrimSpace(lines[end]) != "```"; end++ {
			body = append(body, strings.TrimPrefix(lines[end], indent))
		}
		if end == len(lines) {
			return nil, fmt.Errorf("README.md:%d: the block never ends", start+1)
		}
		transcript := false
		for _, l := range body {
			transcript = transcript || strings.HasPrefix(l, "$ ")
		}
		b := readmeBlock{line: start + 1}
		for j := 0; j < len(body); j++ {
			l := body[j]
			if transcript {
				if !strings.HasPrefix(l, "$ ") {
					if n := len(b.headers); n > 0 && tableHeader.MatchString(strings.TrimSpace(l)) {
						b.headers[n-1] = append(b.headers[n-1], strings.TrimSpace(l))
					}
					continue // output
				}
				b.headers = append(b.headers, nil)
				l = l[2:]
			} else if t := strings.TrimSpace(l); t == "" || strings.HasPrefix(t, "#") {
				continue
			}
			cmd := []string{l}
			for strings.HasSuffix(cmd[len(cmd)-1], "\\") && j+1 < len(body) {
				j++
				cmd = append(cmd, body[j])
			}
			if k := strings.Index(l, "<<"); k >= 0 {
				delim := strings.Trim(strings.Fields(strings.TrimLeft(l[k+2:], "-"))[0], `'"`)
				for j+1 < len(body) {
					j++
					cmd = append(cmd, body[j])
					if strings.TrimSpace(body[j]) == delim {
						break
					}
				}
			}
			b.commands = append(b.commands, strings.Join(cmd, "\n"))
		}
		out = append(out, b)
		i = end
	}
	return out, nil
}

func TestReadmeBlocksAreFound(t *testing.T) {
	text := "intro\n" + readmeMarker + "\n```\n$ export X=1\nout\n$ cat >f <<EOF\na\nEOF\n$ echo a \\\n  b\n```\n" +
		"```sh\nnot marked\n```\n" + readmeMarker + "\n   ```sh\n   # a comment\n   echo one; echo two\n\n   ```\n"
	bs, err := readmeBlocks(text)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"export X=1", "cat >f <<EOF\na\nEOF", "echo a \\\n  b"}, {"echo one; echo two"}}
	if len(bs) != len(want) {
		t.Fatalf("blocks %+v", bs)
	}
	for i := range want {
		if fmt.Sprint(bs[i].commands) != fmt.Sprint(want[i]) {
			t.Errorf("block %d: %q, want %q", i, bs[i].commands, want[i])
		}
	}
	if _, err := readmeBlocks(readmeMarker + "\ntext\n"); err == nil {
		t.Error("a marker before no block was accepted")
	}
}

// TestReadmeCommandsRunAsPrinted runs every marked block of README.md, in
// order, in one shell on a fresh folder (the repository's contrib/ copied
// in, as the tour runs from a checkout) with the built suite on PATH: each
// command must exit 0, and the tour's task must be attested completed
// (none failed). The tour runs real boxes, so it needs root.
func TestReadmeCommandsRunAsPrinted(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the README's tour runs real boxes: needs root (CI runs as root)")
	}
	if testing.Short() {
		t.Skip("-short: no real boxes")
	}
	text, err := os.ReadFile(filepath.Join(repoRoot(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := readmeBlocks(string(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) == 0 {
		t.Fatalf("README.md has no block marked %s", readmeMarker)
	}
	work := t.TempDir()
	contrib := filepath.Join(work, "contrib")
	if err := os.Mkdir(contrib, 0o755); err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(repoRoot(), "contrib", "demo-worker.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(contrib, "demo-worker.sh"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	var sh bytes.Buffer
	sh.WriteString("cd " + work + "\n")
	n := 0
	type shown struct {
		where   string
		headers []string
	}
	var tables = map[int]shown{} // command number -> the headers its printed output shows
	for _, b := range blocks {
		for i, c := range b.commands {
			n++
			where := fmt.Sprintf("README.md:%d: command %d, %s:", b.line, n, strings.SplitN(c, "\n", 2)[0])
			// Each command's output is kept (the braces run it in this
			// shell: an export carries on) and shown as it goes.
			fmt.Fprintf(&sh, "{\n%s\n} >%s/.out.%d 2>&1\nrc=$?\ncat %s/.out.%d\nif [ $rc -ne 0 ]; then echo %s \"exited $rc\" >&2; exit 1; fi\n",
				c, work, n, work, n, "'"+strings.ReplaceAll(where, "'", `'\''`)+"'")
			if i < len(b.headers) && len(b.headers[i]) > 0 {
				tables[n] = shown{where, b.headers[i]}
			}
		}
	}
	cmd := exec.Command("bash", "-c", sh.String())
	cmd.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"ROSTER_EXEC_PATH="+binDir, "ROSTER_HOME=", "HOME="+work)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// A table the README shows as printed has the columns the program
	// prints today (its output, not its figures, is the README's claim).
	for k, sh := range tables {
		got, err := os.ReadFile(filepath.Join(work, fmt.Sprintf(".out.%d", k)))
		if err != nil {
			t.Fatal(err)
		}
		for _, hdr := range sh.headers {
			found := false
			for _, l := range strings.Split(string(got), "\n") {
				// The names, not the spacing: a column is as wide as its values.
				found = found || strings.Join(strings.Fields(l), " ") == strings.Join(strings.Fields(hdr), " ")
			}
			if !found {
				t.Errorf("%s the README shows the header\n\t%s\nbut the command printed\n%s", sh.where, hdr, got)
			}
		}
	}
	// Exit 0 is not enough for the tour: its task must have run well.
	ls := exec.Command(filepath.Join(binDir, "roster-runs"), "ls", "--json")
	ls.Env = append(os.Environ(), "ROSTER_HOME="+filepath.Join(work, "demo-home"))
	runs, err := ls.CombinedOutput()
	if err != nil || !bytes.Contains(runs, []byte(`"attested":"completed"`)) || bytes.Contains(runs, []byte(`"attested":"failed"`)) {
		t.Fatalf("the tour's runs: %v\n%s\n%s", err, runs, out)
	}
	t.Logf("%d commands of %d blocks ran", n, len(blocks))
}
