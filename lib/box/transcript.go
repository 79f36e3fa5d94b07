package box

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultTranscriptMax caps transcript.log (docs/dispatch-and-box.md).
const DefaultTranscriptMax = 64 << 20

// transcript is the box's output on its way to transcript.log: at most max
// bytes are kept, then one line says how much was dropped. It also records
// when the box last wrote, for the idle rule.
type transcript struct {
	mu      sync.Mutex
	f       *os.File
	max     int64
	written int64
	dropped int64
	last    atomic.Int64 // unix nanoseconds of the last output
}

func newTranscript(path string, max int64) (*transcript, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	if max <= 0 {
		max = DefaultTranscriptMax
	}
	t := &transcript{f: f, max: max}
	t.last.Store(time.Now().UnixNano())
	return t, nil
}

func (t *transcript) Write(p []byte) (int, error) {
	t.last.Store(time.Now().UnixNano())
	t.mu.Lock()
	defer t.mu.Unlock()
	keep := int64(len(p))
	if room := t.max - t.written; keep > room {
		keep = max(room, 0)
	}
	if keep > 0 {
		n, err := t.f.Write(p[:keep])
		t.written += int64(n)
		if err != nil {
			t.dropped += int64(len(p) - n)
			return len(p), nil // a full disk must not stop the box's output
		}
	}
	t.dropped += int64(len(p)) - keep
	return len(p), nil
}

// lastOutput is when the box last wrote anything.
func (t *transcript) lastOutput() time.Time { return time.Unix(0, t.last.Load()) }

// Close adds the dropped-bytes line, if any, and syncs the file.
func (t *transcript) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dropped > 0 {
		fmt.Fprintf(t.f, "\nroster-box: transcript capped at %d bytes; %d more bytes dropped\n", t.max, t.dropped)
	}
	t.f.Sync()
	return t.f.Close()
}

// pump copies r into every w until r ends.
func pump(r io.Reader, ws ...io.Writer) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			for _, w := range ws {
				w.Write(buf[:n])
			}
		}
		if err != nil {
			return
		}
	}
}
