package tms

import (
	"bytes"
	"encoding/json"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/roster-sh/roster/lib/errs"
	"golang.org/x/sys/unix"
)

// checkRaw fails unless r's block holds full's tasks, one a line, in
// order, and has and ids find each of them.
func checkRaw(t testing.TB, r *rawFile, full *File, data []byte) {
	t.Helper()
	var lines [][]byte
	if len(r.block) > 0 {
		if r.block[0] != '\n' {
			t.Fatalf("block does not start on a line of its own: %q", data)
		}
		lines = bytes.Split(r.block[1:], []byte(",\n"))
	}
	if len(lines) != len(full.Tasks) || r.n != len(full.Tasks) {
		t.Fatalf("raw read holds %d tasks (n %d), DecodeFile %d: %q", len(lines), r.n, len(full.Tasks), data)
	}
	ids := r.ids()
	for i, raw := range lines {
		var task Task
		if err := json.Unmarshal(raw, &task); err != nil || !reflect.DeepEqual(task, full.Tasks[i]) {
			t.Fatalf("raw task %d %q reads as %+v (%v), DecodeFile %+v", i, raw, task, err, full.Tasks[i])
		}
		if !r.has(task.ID) || ids[i] != task.ID {
			t.Fatalf("raw read does not find task %q (ids %q): %q", task.ID, ids, data)
		}
	}
	if len(ids) != len(lines) {
		t.Fatalf("ids %q for %d tasks", ids, len(lines))
	}
}

// An add leaves tasks.json sealed; the next add reads it through the seal
// and writes what a full decode and encode would.
func TestAddSealsTasksFile(t *testing.T) {
	h := newHome(t, "w")
	p, _ := open(t, h, "w")
	a := mustAdd(t, p, NewTask{Text: "a"})
	mustAdd(t, p, NewTask{Text: "b \"quoted\" \u00e9", After: []string{a.ID}})
	data, seal, err := readSealed(p.W.TasksFile())
	if err != nil {
		t.Fatal(err)
	}
	if seal == "" {
		t.Skip("the temporary folder's filesystem keeps no user attributes")
	}
	if !sealed(seal, data) {
		t.Fatalf("seal %q does not match tasks.json", seal)
	}
	r, rf, ok := decodeSealed(data)
	if !ok {
		t.Fatalf("a sealed tasks.json does not read as one: %s", data)
	}
	full, err := DecodeFile("tasks.json", data)
	if err != nil {
		t.Fatal(err)
	}
	if rf.Version != full.Version || !reflect.DeepEqual(rf.Templates, full.Templates) {
		t.Fatalf("sealed read %+v, DecodeFile %+v", rf, full)
	}
	checkRaw(t, r, full, data)
	if want := encodeFile(full, "", t0); !bytes.Equal(data, want) {
		t.Fatalf("tasks.json is not the writer's form:\n%s\nwant\n%s", data, want)
	}
}

// A sealed file changed in place keeps its attribute but no longer matches
// it: it is checked task by task, and refused (never overwritten) if
// corrupt.
func TestSealDoesNotCoverAnEditedFile(t *testing.T) {
	h := newHome(t, "w")
	p, _ := open(t, h, "w")
	mustAdd(t, p, NewTask{Text: "a"})
	data, seal, err := readSealed(p.W.TasksFile())
	if err != nil {
		t.Fatal(err)
	}
	if seal == "" {
		t.Skip("the temporary folder's filesystem keeps no user attributes")
	}
	bad := bytes.Replace(data, []byte(`"state":"pending"`), []byte(`"state":"pendin!"`), 1)
	f, err := os.OpenFile(p.W.TasksFile(), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bad, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, seal2, _ := readSealed(p.W.TasksFile()); seal2 != seal {
		t.Fatalf("the in-place write dropped the seal (%q, was %q): the test proves nothing", seal2, seal)
	}
	if _, err := p.Add(ctx, NewTask{Text: "b"}); !errors.Is(err, errs.ErrRefused) {
		t.Fatalf("add on an edited sealed file: %v, want refused", err)
	}
	if after, _ := os.ReadFile(p.W.TasksFile()); !bytes.Equal(after, bad) {
		t.Fatal("the refused file was rewritten")
	}
}

// A file sealed the way earlier versions did ("1 SIZE CRC-32C") is not
// taken as sealed: a corrupt task under such a seal, true to its bytes,
// is found by the full check and refused; a sound file is checked, and
// the add seals it anew.
func TestOldSealIsCheckedInFull(t *testing.T) {
	h := newHome(t, "w")
	p, _ := open(t, h, "w")
	mustAdd(t, p, NewTask{Text: "a"})
	path := p.W.TasksFile()
	if _, seal, _ := readSealed(path); seal == "" {
		t.Skip("the temporary folder's filesystem keeps no user attributes")
	}
	oldSeal := func(data []byte) {
		t.Helper()
		v1 := "1 " + strconv.Itoa(len(data)) + " " + strconv.FormatUint(uint64(crc32.Checksum(data, castagnoli())), 16)
		if err := unix.Setxattr(path, sealAttr, []byte(v1), 0); err != nil {
			t.Fatal(err)
		}
	}
	data, _, err := readSealed(path)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Replace(data, []byte(`"state":"pending"`), []byte(`"state":"pendin!"`), 1)
	if err := os.WriteFile(path, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	oldSeal(bad)
	if _, err := p.Add(ctx, NewTask{Text: "b"}); !errors.Is(err, errs.ErrRefused) {
		t.Fatalf("add on a corrupt file under an old seal: %v, want refused", err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	oldSeal(data)
	mustAdd(t, p, NewTask{Text: "c"})
	after, seal, err := readSealed(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(seal, "2 ") || !sealed(seal, after) {
		t.Fatalf("seal after the add: %q", seal)
	}
}

// crc32Combine gives the checksum of two pieces one after the other, as
// one pass over both does, whatever their lengths (empty ones too).
func TestCRC32Combine(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 3<<20)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	lens := []int{0, 1, 2, 3, 7, 8, 9, 63, 64, 65, 1000, 4096, 1 << 20, 3<<20 - 5}
	for _, la := range lens {
		for _, lb := range lens {
			if la+lb > len(buf) {
				continue
			}
			a, b := buf[:la], buf[la:la+lb]
			want := crc32.ChecksumIEEE(buf[:la+lb])
			if got := crc32Combine(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), lb); got != want {
				t.Fatalf("combine of %d and %d bytes: %08x, want %08x", la, lb, got, want)
			}
		}
	}
	pieces := [][]byte{buf[:10], buf[10:5000], nil, buf[5000:5001], buf[5001 : 1<<20]}
	for known := -1; known < len(pieces); known++ {
		var sum uint32
		if known >= 0 {
			sum = crc32.ChecksumIEEE(pieces[known])
		}
		if got, want := sealOf(pieces, known, sum), sealText(1<<20, crc32.ChecksumIEEE(buf[:1<<20])); got != want {
			t.Fatalf("sealOf with piece %d known: %q, want %q", known, got, want)
		}
	}
}

// A change holds the files it replaces open across their renames and lets
// them go before it returns: no descriptor of this partition's files is
// left open after it, the replaced ones (deleted) included.
func TestChangesLeaveNoFileOpen(t *testing.T) {
	h := newHome(t, "w")
	p, _ := open(t, h, "w")
	for i := 0; i < 5; i++ {
		a := mustAdd(t, p, NewTask{Text: "a"})
		if _, err := p.Cancel(ctx, a.ID, "", ByOwner); err != nil {
			t.Fatal(err)
		}
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	for _, fd := range fds {
		target, err := os.Readlink("/proc/self/fd/" + fd.Name())
		if err == nil && strings.HasPrefix(target, p.W.Dir) {
			t.Errorf("descriptor %s still open on %s", fd.Name(), target)
		}
	}
}
