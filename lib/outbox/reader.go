package outbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/fsx"
)

// Make creates a run's outbox at dir with the ownership the spec gives:
// outbox/ and done/ root-owned 0755 (read-only to the box), tmp/ and new/
// root-owned 1733 (the box adds and renames its own files, never replaces
// the folders). Call it before the box starts. It syncs nothing: the
// caller makes the outbox's entry durable (an fsync of its parent) before
// the box starts, with the other records it writes there (the supervisor:
// box.json's write), instead of a folder fsync of its own on the start's
// path.
func Make(dir string) error {
	for _, d := range []struct {
		path string
		mode uint32
	}{{dir, 0o755}, {filepath.Join(dir, "done"), 0o755}, {filepath.Join(dir, "tmp"), 0o1733}, {filepath.Join(dir, "new"), 0o1733}} {
		if err := os.Mkdir(d.path, 0o700); err != nil && !os.IsExist(err) {
			return fmt.Errorf("outbox: %w", err)
		}
		f, err := fsx.OpenDir(d.path)
		if err != nil {
			return fmt.Errorf("outbox: %w", err)
		}
		err = f.Chown(0, 0)
		if err == nil {
			err = unix.Fchmod(int(f.Fd()), d.mode)
		}
		f.Close()
		if err != nil {
			return fmt.Errorf("outbox %s: %w", d.path, err)
		}
	}
	return nil
}

// Entry is one thing found in new/: a decoded action, or why it was refused.
type Entry struct {
	Name   string
	N      int // 0 when the name is not N.json
	Action *Action
	Err    error  // refused: not a regular file, too large, malformed, a number used before
	reused bool   // N was taken before: done/N.json is its first entry's answer
	ino    uint64 // the entry's inode when it was listed
}

// Reader is the host's side of an outbox. It holds descriptors of the
// new/ and done/ folders it was opened on, so a folder renamed away and
// replaced (by anyone) can never redirect it.
type Reader struct {
	dir      string
	newDir   *os.File
	doneDir  *os.File
	newStat  unix.Stat_t
	seen     map[string]uint64 // entries that could not be removed: name → inode
	numbers  map[int]bool      // the numbers taken so far (never answered twice)
	waiting  map[string]sighting
	noWait   bool
	taken    int   // entries taken from new/, refused ones too (MaxActions)
	read     int64 // bytes of action files read (MaxActionBytes)
	replaced bool
}

// Open opens the outbox at dir (made by Make).
func Open(dir string) (*Reader, error) {
	nd, err := fsx.OpenDir(filepath.Join(dir, "new"))
	if err != nil {
		return nil, err
	}
	dd, err := fsx.OpenDir(filepath.Join(dir, "done"))
	if err != nil {
		nd.Close()
		return nil, err
	}
	r := &Reader{dir: dir, newDir: nd, doneDir: dd, seen: map[string]uint64{}, numbers: map[int]bool{}, waiting: map[string]sighting{}}
	if err := unix.Fstat(int(nd.Fd()), &r.newStat); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// Close releases the folder descriptors.
func (r *Reader) Close() error {
	r.newDir.Close()
	return r.doneDir.Close()
}

// Replaced reports whether the path outbox/new no longer names the folder
// the reader holds (it keeps reading the one it holds).
func (r *Reader) Replaced() bool {
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(r.dir, "new"), &st); err != nil ||
		st.Dev != r.newStat.Dev || st.Ino != r.newStat.Ino {
		r.replaced = true
	}
	return r.replaced
}

// actionName tells an action file's name, ^[1-9][0-9]{0,8}\.json$, by hand:
// that regexp's compilation was the costliest package init of every
// roster-task and roster-box start.
func actionName(name string) bool {
	num, ok := strings.CutSuffix(name, ".json")
	if !ok || len(num) < 1 || len(num) > 9 || num[0] == '0' {
		return false
	}
	for i := 0; i < len(num); i++ {
		if num[i] < '0' || num[i] > '9' {
			return false
		}
	}
	return true
}

// Poll returns what is new in new/, oldest number first. Every entry is
// removed from new/ once read (or refused); call Answer for each. Every
// entry counts toward MaxActions, refused ones too: once that many have
// been taken, Poll reads nothing more (Capped) and what is left in new/
// stays there unread (Ignored).
func (r *Reader) Poll() ([]Entry, error) { return r.PollUpTo(0) }

// PollUpTo is Poll taking at most n entries (n <= 0: no bound of its own);
// the rest stay in new/ for a later poll, in their order.
func (r *Reader) PollUpTo(n int) ([]Entry, error) {
	if r.Capped() {
		return nil, nil
	}
	if _, err := r.newDir.Seek(0, 0); err != nil {
		return nil, err
	}
	names, err := r.newDir.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("outbox %s: list new/: %w", r.dir, err)
	}
	var out []Entry
	listed := make(map[string]bool, len(names))
	for _, name := range names {
		listed[name] = true
		var st unix.Stat_t
		if err := unix.Fstatat(int(r.newDir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue // gone meanwhile
		}
		if ino, ok := r.seen[name]; ok && ino == st.Ino {
			continue // taken before and could not be removed
		}
		e := Entry{Name: name, ino: st.Ino}
		if actionName(name) {
			e.N, _ = strconv.Atoi(name[:len(name)-len(".json")])
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].N != out[j].N {
			return out[i].N < out[j].N
		}
		return out[i].Name < out[j].Name
	})
	for name := range r.waiting {
		if !listed[name] {
			delete(r.waiting, name)
		}
	}
	if left := MaxActions - r.taken; len(out) > left {
		out = out[:left]
	}
	if n > 0 && len(out) > n {
		out = out[:n]
	}
	taken := out[:0]
	for i := range out {
		e := out[i]
		if e.N == 0 {
			e.Err = fmt.Errorf("%w: name %q is not N.json", ErrBadAction, truncate(e.Name, 60))
		} else if r.numbers[e.N] {
			e.Err = fmt.Errorf("%w: action number %d was used before in this run (numbers are never reused)", ErrBadAction, e.N)
			e.reused = true
		} else if data, st, err := r.readAction(e.Name); err != nil {
			e.Err = fmt.Errorf("%w: %s", ErrBadAction, describe(err))
		} else if e.Action, e.Err = Decode(data); e.Err != nil && r.stillWriting(e.Name, st) {
			continue // not taken: looked at again at the next poll
		} else {
			r.read += int64(len(data))
		}
		delete(r.waiting, e.Name)
		r.taken++
		taken = append(taken, e)
		if e.N != 0 {
			r.numbers[e.N] = true
			r.claim(e.N)
		}
		if r.remove(e.Name) {
			delete(r.seen, e.Name)
		} else {
			r.seen[e.Name] = e.ino
		}
	}
	return taken, nil
}

// A sighting is an entry that did not decode, as it was when it was read:
// a box writing straight into new/ (not through tmp/) may still be
// writing it.
type sighting struct {
	ino, size uint64
	mtime     unix.Timespec
	polls     int
}

// MaxWaitPolls bounds how many polls an entry that does not decode and is
// still changing (size or mtime) is left for its writer to finish.
const MaxWaitPolls = 50

// stillWriting reports whether the entry, which did not decode, should be
// read again at the next poll: the first time it is seen, and while its
// size or mtime keeps changing between polls (at most MaxWaitPolls).
func (r *Reader) stillWriting(name string, st unix.Stat_t) bool {
	if r.noWait {
		return false
	}
	now := sighting{ino: st.Ino, size: uint64(st.Size), mtime: st.Mtim}
	last, ok := r.waiting[name]
	switch {
	case !ok || last.ino != now.ino:
	case last.size == now.size && last.mtime == now.mtime, last.polls >= MaxWaitPolls:
		return false
	default:
		now.polls = last.polls + 1
	}
	r.waiting[name] = now
	return true
}

// StopWaiting makes Poll take every entry as it is: call it once the box
// has ended (nothing can be writing any more).
func (r *Reader) StopWaiting() { r.noWait = true }

// errActionBytes refuses an action past MaxActionBytes of the run.
var errActionBytes = fmt.Errorf("over %d MiB of action files in this run: refused unread", MaxActionBytes>>20)

// readAction opens name in new/ (fsx.OpenBeneath: regular files only, no
// link followed, never blocking) and reads it, refusing by its size before
// reading anything one over MaxActionSize, or one that would take the run
// past MaxActionBytes.
func (r *Reader) readAction(name string) ([]byte, unix.Stat_t, error) {
	var st unix.Stat_t
	f, err := fsx.OpenBeneath(r.newDir, name, unix.O_RDONLY, 0)
	if err != nil {
		return nil, st, err
	}
	defer f.Close()
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, st, err
	}
	tooLarge := fmt.Errorf("%w (over %d bytes)", fsx.ErrTooLarge, MaxActionSize)
	if st.Size > MaxActionSize {
		return nil, st, tooLarge
	}
	if r.read+st.Size > MaxActionBytes {
		return nil, st, errActionBytes
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxActionSize+1))
	if err != nil {
		return nil, st, err
	}
	if len(data) > MaxActionSize {
		return nil, st, tooLarge
	}
	return data, st, nil
}

// Capped reports whether MaxActions entries have been taken from new/:
// from then on Poll reads nothing, and every later action is refused
// (AnswerOver).
func (r *Reader) Capped() bool { return r.taken >= MaxActions }

// Ignored counts the entries in new/ that were never taken (those past
// the cap). It lists the folder once.
func (r *Reader) Ignored() int {
	if _, err := r.newDir.Seek(0, 0); err != nil {
		return 0
	}
	names, _ := r.newDir.Readdirnames(-1)
	n := 0
	for _, name := range names {
		if _, ok := r.seen[name]; !ok {
			n++
		}
	}
	return n
}

// OverName is the answer in done/ to every action past the cap: the
// in-box writer reads it instead of waiting for a done/N.json that never
// comes.
const OverName = "over.json"

// AnswerOver writes done/over.json (once the run is Capped).
func (r *Reader) AnswerOver() error {
	data, err := json.Marshal(overOutcome())
	if err != nil {
		return err
	}
	return r.writeDone(OverName, data)
}

func overOutcome() *Outcome {
	return &Outcome{Format: 1, Outcome: "refused", Code: CodeBadInput,
		Message: fmt.Sprintf("over %d actions in this run: this and every later action is refused", MaxActions)}
}

// describe words an open/read refusal without the host path.
func describe(err error) string {
	switch {
	case errors.Is(err, fsx.ErrNotRegular):
		return "not a regular file"
	case errors.Is(err, fsx.ErrTooLarge):
		return fmt.Sprintf("over %d bytes", MaxActionSize)
	case errors.Is(err, errActionBytes):
		return err.Error()
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV):
		return "a symlink (not followed)"
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// claim makes tmp/N.claim for action N before it leaves new/: one the box
// wrote straight into new/ has no claim, and a writer looking for a free
// number between the removal and the answer in done/ would find N in
// neither and post under it, to be refused as a reused number. Best
// effort: a claim already there (the writer's own) is what is wanted, and
// without tmp/ no writer can claim anything.
func (r *Reader) claim(n int) {
	fd, err := unix.Open(filepath.Join(r.dir, "tmp", strconv.Itoa(n)+".claim"), unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err == nil {
		unix.Close(fd)
	}
}

// remove unlinks name from new/ relative to the held descriptor; it
// reports whether name is gone.
func (r *Reader) remove(name string) bool {
	fd := int(r.newDir.Fd())
	err := unix.Unlinkat(fd, name, 0)
	if err == unix.EISDIR || err == unix.EPERM {
		err = unix.Unlinkat(fd, name, unix.AT_REMOVEDIR)
	}
	return err == nil || err == unix.ENOENT
}

// Answer writes done/N.json atomically (nothing for an entry without a
// number: the box never waits for one).
func (r *Reader) Answer(e Entry, o *Outcome) error {
	if e.N == 0 || e.reused {
		return nil // no number, or its number's answer is already there
	}
	o.Format, o.N = 1, e.N
	data, err := json.Marshal(o)
	if err != nil {
		return err
	}
	if err := r.writeDone(strconv.Itoa(e.N)+".json", data); err != nil {
		return fmt.Errorf("outbox %s: answer %d: %w", r.dir, e.N, err)
	}
	return nil
}

// writeDone writes done/name atomically and durably, never replacing it.
func (r *Reader) writeDone(name string, data []byte) error {
	tmp := "." + name + ".tmp"
	dfd := int(r.doneDir.Fd())
	_ = unix.Unlinkat(dfd, tmp, 0)
	fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	f.Close()
	if err == nil {
		err = unix.Renameat2(dfd, tmp, dfd, name, unix.RENAME_NOREPLACE)
	}
	if err == nil {
		err = r.doneDir.Sync()
	}
	return err
}
