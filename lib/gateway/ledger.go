package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/roster-sh/roster/lib/runs"
	"golang.org/x/sys/unix"
)

// DefaultLedgerMax caps gateway.jsonl.
const DefaultLedgerMax = 8 << 20

// ledger appends runs/RUN/gateway.jsonl. Lines are handed to one writer
// goroutine that writes what has queued up in one write and fsyncs it
// (group commit): every line is durable shortly after its request ended,
// and a burst of requests costs one fsync, not one each. Each write holds
// whole lines, but a kill -9 can still cut the write in flight short at a
// page boundary (the kernel stops a write when a fatal signal is
// pending): the last line may then be torn, which readers
// (runs.ScanLedger) report as torn and never decode, and which the next
// opening of the ledger truncates (layout.md's rule for appended files).
type ledger struct {
	mu     sync.Mutex // orders seq with the queue
	seq    int64
	closed bool
	ch     chan []byte
	done   chan struct{}

	f       *os.File
	max     int64
	written int64
	dropped int64
	err     error // the first write error; serving goes on
	now     func() time.Time
}

func openLedger(path string, max int64, now func() time.Time) (*ledger, error) {
	l := &ledger{max: max, now: now, ch: make(chan []byte, 1024), done: make(chan struct{})}
	if l.max <= 0 {
		l.max = DefaultLedgerMax
	}
	if path != "" {
		fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_APPEND|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		if err != nil {
			return nil, fmt.Errorf("gateway ledger: %w", &os.PathError{Op: "open", Path: path, Err: err})
		}
		l.f = os.NewFile(uintptr(fd), path)
		if err := dropTornTail(l.f); err != nil {
			l.f.Close()
			return nil, fmt.Errorf("gateway ledger: %w", err)
		}
		if st, err := l.f.Stat(); err == nil {
			l.written = st.Size()
		}
	}
	go l.run()
	return l, nil
}

// add stamps e with the next seq and queues it.
func (l *ledger) add(e runs.LedgerEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.seq++
	e.Seq = l.seq
	line, err := json.Marshal(e)
	if err != nil {
		return
	}
	l.ch <- line
}

func (l *ledger) run() {
	defer close(l.done)
	var buf []byte
	for line := range l.ch {
		buf = l.take(buf[:0], line)
	drain:
		for len(buf) < 256<<10 {
			select {
			case more, ok := <-l.ch:
				if !ok {
					break drain
				}
				buf = l.take(buf, more)
			default:
				break drain
			}
		}
		l.flush(buf)
	}
}

// take appends line to buf unless the cap is reached (then it counts it).
func (l *ledger) take(buf, line []byte) []byte {
	if l.written+int64(len(buf))+int64(len(line))+1 > l.max {
		l.dropped++
		return buf
	}
	return append(append(buf, line...), '\n')
}

func (l *ledger) flush(buf []byte) {
	if len(buf) == 0 || l.f == nil {
		return
	}
	n, err := l.f.Write(buf)
	l.written += int64(n)
	if err == nil {
		err = l.f.Sync()
	}
	if err != nil && l.err == nil {
		l.err = fmt.Errorf("gateway ledger %s: %w", l.f.Name(), err)
	}
}

// close drains the queue, adds the capped marker if lines were dropped,
// syncs and closes the file.
func (l *ledger) close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		<-l.done
		return l.err
	}
	l.closed = true
	close(l.ch)
	seq := l.seq + 1
	l.mu.Unlock()
	<-l.done
	if l.dropped > 0 && l.f != nil {
		line, _ := json.Marshal(runs.LedgerEntry{Seq: seq, At: l.now().UTC(), Kind: "capped", Decision: "capped", Dropped: l.dropped})
		l.f.Write(append(line, '\n')) // past the cap by this one line, so it is always there
		l.f.Sync()
	}
	if l.f != nil {
		if err := l.f.Close(); err != nil && l.err == nil {
			l.err = err
		}
	}
	return l.err
}

// dropTornTail truncates f after its last newline when its last byte is
// not one (a write cut short by a kill -9), so that appends start on a
// line of their own.
func dropTornTail(f *os.File) error {
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return err
	}
	var b [1]byte
	if _, err := f.ReadAt(b[:], st.Size()-1); err != nil {
		return err
	}
	if b[0] == '\n' {
		return nil
	}
	const chunk = 64 << 10
	buf := make([]byte, chunk)
	end := st.Size()
	for end > 0 {
		off := max(end-chunk, 0)
		n, err := f.ReadAt(buf[:end-off], off)
		if err != nil && n < int(end-off) {
			return err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return f.Truncate(off + int64(i) + 1)
		}
		end = off
	}
	return f.Truncate(0)
}
