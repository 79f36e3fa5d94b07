package web

import (
	"bytes"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/roster-sh/roster/lib/home"
)

// heapWatch is a ResponseWriter that keeps only the page's last bytes
// and samples the heap as the page is written.
type heapWatch struct {
	h       http.Header
	n       int64
	tail    []byte
	maxHeap uint64
	writes  int
}

func (w *heapWatch) Header() http.Header { return w.h }
func (w *heapWatch) WriteHeader(int)     {}
func (w *heapWatch) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	w.tail = append(w.tail, p...)
	if len(w.tail) > 4096 {
		w.tail = append([]byte(nil), w.tail[len(w.tail)-4096:]...)
	}
	if w.writes++; w.writes%20000 == 0 {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		w.maxHeap = max(w.maxHeap, m.HeapInuse)
	}
	return len(p), nil
}

// Issue 29, goal 5: a run page of a 64 MiB transcript streams; it never
// holds the transcript whole.
func TestRunPageStreamsA64MiBTranscript(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 64 MiB")
	}
	e := newEnv(t)
	path := home.Transcript(e.b.Home.Worker(e.b.Worker).Run(e.b.Run))
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	line := []byte(strings.Repeat("x", 1000) + "<script>alert(1)</script>\n")
	var chunk bytes.Buffer
	for chunk.Len() < 1<<20 {
		chunk.Write(line)
	}
	for size := 0; size < 64<<20; size += chunk.Len() {
		f.Write(chunk.Bytes())
	}
	f.WriteString("the last line\n")
	f.Close()
	runtime.GC()
	w := &heapWatch{h: http.Header{}}
	req := newRequest("GET", "/r/"+e.b.Run)
	e.s.ServeHTTP(w, req)
	if w.n < 64<<20 || !bytes.Contains(w.tail, []byte("the last line")) {
		t.Fatalf("page of %d bytes, ending %q", w.n, w.tail)
	}
	if w.maxHeap == 0 || w.maxHeap > 48<<20 {
		t.Fatalf("heap in use reached %d MiB while streaming a 64 MiB transcript", w.maxHeap>>20)
	}
	t.Logf("page %d MiB, heap in use at most %d MiB", w.n>>20, w.maxHeap>>20)
}
