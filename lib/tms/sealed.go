package tms

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// tasks.json's seal: the writer's mark on a file it wrote, so that the
// next change that only appends a task (Add) can keep the tasks as their
// bytes without checking each one again. At 10,000 pending tasks that
// check was most of an add's time (9 of its 25 ms of CPU, 2026-12-01).
//
// Every tasks.json this package writes carries the extended attribute
// user.roster.seal, "2 SIZE CRC": the file's size and CRC-32 (IEEE, zlib's
// polynomial) of all its bytes. It is set on the temporary file before that is fsynced
// and renamed, so the file and its seal appear together, and it belongs to
// that inode: a file written by anything else (a person's editor, another
// program, a copy that drops attributes) has none. A read that finds the
// seal matching the bytes it read knows they are the writer's own form,
// made from tasks it had checked: one entry a line, each starting with its
// id. Anything else (no seal, a filesystem without user attributes, a size
// or checksum that differs: edited or damaged in place) is read and checked
// task by task as before, and refused if corrupt. The seal is a cache of a
// check, never data: it is not part of tasks.json's format (which stays as
// docs/layout.md has it), every other reader ignores it, and a wrong or
// missing one only costs the full check. CRC-32 is a checksum against
// damage and edits, not a signature: tasks/ is root's alone.
//
// The seal was "1 SIZE CRC-32C" before; CRC-32C's table in hash/crc32 is
// 1.5 MB of checksumming to build (0.2-0.35 ms, in every process that
// uses it), where the IEEE polynomial's carry-less-multiply code needs
// none and sums 2.3 MB as fast: a file sealed "1 ..." does not match, is
// checked once in full and sealed anew. Castagnoli stays for the history
// index's head (history.go), built only by a change that reads it.

const sealAttr = "user.roster.seal"

// sealText is the seal of a file of size bytes with checksum sum.
func sealText(size int, sum uint32) string {
	return "2 " + strconv.Itoa(size) + " " + strconv.FormatUint(uint64(sum), 16)
}

// sealed tells whether data is what a file sealed seal holds.
func sealed(seal string, data []byte) bool {
	return seal != "" && seal == sealText(len(data), crc32.ChecksumIEEE(data))
}

// checkSeal tells whether r's file is what a file sealed seal holds,
// summing its tasks' block apart from the rest (one pass over the file, as
// sealed): the block's sum is kept for the file that the change writes,
// which holds the same block (blockSum).
func (r *rawFile) checkSeal(seal string) bool {
	if seal == "" {
		return false
	}
	end := r.off + len(r.block)
	sum := crc32.ChecksumIEEE(r.block)
	c := crc32.ChecksumIEEE(r.data[:r.off])
	c = crc32.Update(crc32Combine(c, sum, len(r.block)), crc32.IEEETable, r.data[end:])
	if seal != sealText(len(r.data), c) {
		return false
	}
	r.sum, r.summed = sum, true
	return true
}

// blockSum is the CRC-32 of r's block.
func (r *rawFile) blockSum() uint32 {
	if !r.summed {
		r.sum, r.summed = crc32.ChecksumIEEE(r.block), true
	}
	return r.sum
}

// sealOf is the seal of a file made of pieces, in order; the piece at
// index known (-1: none) has CRC-32 sum, and is not summed again.
func sealOf(pieces [][]byte, known int, sum uint32) string {
	var c uint32
	size := 0
	for i, b := range pieces {
		if i == known {
			c = crc32Combine(c, sum, len(b))
		} else {
			c = crc32.Update(c, crc32.IEEETable, b)
		}
		size += len(b)
	}
	return sealText(size, c)
}

// crc32Combine is the CRC-32 of a followed by b, from a's CRC, b's and
// b's length (zlib's crc32_combine): the checksum of the 2 MB of tasks a
// sealed add keeps is taken once, when the seal is checked, not again for
// the file it writes.
func crc32Combine(crcA, crcB uint32, lenB int) uint32 {
	// crcA times x^(8 lenB) modulo the polynomial, plus crcB. Bit 31 is
	// x^0 (the reflected form hash/crc32 uses).
	p := uint32(1) << 31   // x^0
	x2n := uint32(1) << 30 // x^1, squared on each step: x^(2^k)
	for k, n := 0, uint64(lenB)*8; n != 0; k, n = k+1, n>>1 {
		if n&1 != 0 {
			p = multModP(x2n, p)
		}
		x2n = multModP(x2n, x2n)
	}
	return multModP(p, crcA) ^ crcB
}

// multModP is a times b modulo the IEEE polynomial (reflected).
func multModP(a, b uint32) uint32 {
	const poly = crc32.IEEE
	var p uint32
	for m := uint32(1) << 31; m != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
		}
		if b&1 != 0 {
			b = b>>1 ^ poly
		} else {
			b >>= 1
		}
	}
	return p
}

// readSeal returns f's seal, "" if it has none or it cannot be read.
func readSeal(f *os.File) string {
	rc, err := f.SyscallConn()
	if err != nil {
		return ""
	}
	var buf [64]byte
	n := -1
	rc.Control(func(fd uintptr) {
		n, err = unix.Fgetxattr(int(fd), sealAttr, buf[:])
	})
	if err != nil || n < 0 {
		return ""
	}
	return string(buf[:n])
}

// setSeal seals f; a filesystem without user attributes leaves it
// unsealed (its next read checks every task).
func setSeal(f *os.File, seal string) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		unix.Fsetxattr(int(fd), sealAttr, []byte(seal), 0)
	})
}

// readSealed reads path whole and its seal, from one open file (so the
// two belong to the same inode even while a writer replaces the file).
func readSealed(path string) (data []byte, seal string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	var size int64
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	// As os.ReadFile: room for the size and a little (a bytes.Buffer
	// would double itself near the end, a second copy of a big file).
	data = make([]byte, 0, size+512)
	prefault(data[:cap(data)])
	for {
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, "", err
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
	}
	return data, readSeal(f), nil
}

// prefault has the kernel back b's pages with memory in one call
// (MADV_POPULATE_WRITE, Linux 5.14; refused and so a no-op before) instead
// of one page fault at a time as the read fills them: a fresh 2.3 MB
// buffer is ~570 faults, each a trap (costly in a VM). It changes no byte
// of b. Add at 9,500 pending, 400 interleaved runs twice at load 8.6-9.7:
// 21.24 -> 20.38 and 27.86 -> 26.63 ms.
func prefault(b []byte) {
	if len(b) < 64<<10 {
		return
	}
	const page = 4096
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	start, end := (p+page-1)&^(page-1), (p+uintptr(len(b)))&^(page-1)
	unix.Syscall(unix.SYS_MADVISE, start, end-start, unix.MADV_POPULATE_WRITE)
}

// decodeSealed reads a sealed tasks.json (the writer's form, known good):
// the head, the tasks as one block, the templates decoded. ok=false if the
// text is not that form after all (the caller then checks it task by
// task).
func decodeSealed(data []byte) (*rawFile, *File, bool) {
	d := &fdec{b: data}
	f := &File{}
	if !d.lit(`{"format":`) || !d.int(&f.Format) || f.Format != Format || !d.lit(`,"version":`) {
		return nil, nil, false
	}
	v, ok := d.integer(64)
	if !ok || v < 0 || !d.lit(",\n\"tasks\":[") {
		return nil, nil, false
	}
	f.Version = v
	const end = "\n],\n\"templates\":"
	// From the end: the templates are few, and "\n]," is in no entry.
	i := bytes.LastIndex(data[d.i:], []byte(end))
	if i < 0 {
		return nil, nil, false
	}
	r := &rawFile{data: data, block: data[d.i : d.i+i], off: d.i}
	r.n = bytes.Count(r.block, []byte{'\n'})
	if r.n > 0 && !bytes.HasPrefix(r.block, []byte("\n{\"id\":")) {
		return nil, nil, false
	}
	d.i += i + len(end)
	f.Templates = []Template{}
	if !d.array(func() bool {
		f.Templates = append(f.Templates, Template{})
		return d.template(&f.Templates[len(f.Templates)-1])
	}) || !d.eat('}') || !validTemplates(f.Templates) {
		return nil, nil, false
	}
	if d.ws(); d.i != len(data) {
		return nil, nil, false
	}
	return r, f, true
}

// lit consumes s exactly (no white space before it).
func (d *fdec) lit(s string) bool {
	if !bytes.HasPrefix(d.b[d.i:], []byte(s)) {
		return false
	}
	d.i += len(s)
	return true
}

// readRaw is readFile keeping the tasks encoded (raw) when the file is in
// the writer's form (sealed, or checked task by task); otherwise raw is nil
// and the decoded file is returned, or the refusal.
func readRaw(path string) (*rawFile, *File, error) {
	data, seal, err := readSealed(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &File{Format: Format}, nil
	}
	if err != nil {
		return nil, nil, refused(path, "cannot read: %v", err)
	}
	if seal != "" {
		if r, f, ok := decodeSealed(data); ok && r.checkSeal(seal) {
			return r, f, nil
		}
	}
	if r, f, ok := decodeRaw(data); ok {
		return r, f, nil
	}
	f, err := DecodeFile(path, data)
	return nil, f, err
}

// pendingFile is a file being written whole: its bytes go to a temporary
// file beside it (".NAME" and a random suffix, as renameio names them),
// which rename puts in its place once synced.
type pendingFile struct {
	f      *os.File
	path   string
	synced bool
	done   bool
}

// writePending writes pieces, in order, to a new temporary file for path
// (sealed with seal unless it is ""), with mode perm exactly; nothing
// replaces path until rename.
func writePending(path string, perm os.FileMode, pieces [][]byte, seal string) (*pendingFile, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"*")
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	p := &pendingFile{f: f, path: path}
	if err := f.Chmod(perm); err != nil { // CreateTemp makes it 0600
		p.abandon()
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	for _, b := range pieces {
		if _, err := f.Write(b); err != nil {
			p.abandon()
			return nil, fmt.Errorf("write %s: %w", path, err)
		}
	}
	if seal != "" {
		setSeal(f, seal)
	}
	return p, nil
}

// sync fsyncs the temporary file (its data and its seal).
func (p *pendingFile) sync() error {
	if err := p.f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", p.path, err)
	}
	p.synced = true
	return nil
}

// rename puts the synced file in place (the folder not yet synced).
func (p *pendingFile) rename() error {
	if !p.synced {
		if err := p.sync(); err != nil {
			return err
		}
	}
	if err := p.f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", p.path, err)
	}
	if err := os.Rename(p.f.Name(), p.path); err != nil {
		os.Remove(p.f.Name())
		return fmt.Errorf("write %s: %w", p.path, err)
	}
	p.done = true
	return nil
}

// held is a file about to be replaced, kept open (O_PATH: no reading, no
// blocking on odd files) so that its rename does not free it; -1 if there
// was none.
type held int

// hold opens path's file to be let go after its replacement.
func hold(path string) held {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return held(fd)
}

// release lets the file go (its blocks are freed now if it was replaced);
// never fails.
func (h held) release() error {
	if h >= 0 {
		unix.Close(int(h))
	}
	return nil
}

// abandon removes the temporary file (after a failure elsewhere).
func (p *pendingFile) abandon() {
	if !p.done {
		p.f.Close()
		os.Remove(p.f.Name())
		p.done = true
	}
}
