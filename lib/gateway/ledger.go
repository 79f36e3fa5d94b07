package gateway

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/jsonw"
	"github.com/roster-sh/roster/lib/runs"
	"golang.org/x/sys/unix"
)

// DefaultLedgerMax caps gateway.jsonl's allowed tunnel and http lines;
// model calls, git requests and refusals go on to HardCapFactor times it.
const DefaultLedgerMax = 8 << 20

// ledger appends runs/RUN/gateway.jsonl. A request's line is appended to
// a pending buffer; one writer goroutine takes what has queued up, writes
// it in one write and fsyncs it (group commit): every line is durable
// shortly after its request ended, and a burst of requests costs one
// fsync, not one each. Requests wait while maxPending bytes are queued (a
// stalled disk slows the box down instead of growing the supervisor).
// Each write holds whole lines, but a kill -9 can still cut the write in
// flight short at a page boundary (the kernel stops a write when a fatal
// signal is pending): the last line may then be torn, which readers
// (runs.ScanLedger) report as torn and never decode, and which the next
// opening of the ledger truncates, as does the reap that records the end
// of a killed supervisor's run (layout.md's rule for appended files).
type ledger struct {
	mu      sync.Mutex // orders seq with the pending lines
	ready   sync.Cond  // the writer waits for lines (or close)
	space   sync.Cond  // add waits for the writer to take a full buffer
	seq     int64
	closed  bool
	pending []byte // whole lines not yet taken by the writer
	queued  int64  // the file's size once every accepted line is written
	dropped int64  // lines counted, not written: the cap was reached
	done    chan struct{}

	f   *os.File
	max int64
	err error // the first write error; serving goes on
	now func() time.Time
}

// maxPending bounds the lines waiting for the writer.
const maxPending = 256 << 10

func openLedger(path string, max int64, now func() time.Time) (*ledger, error) {
	l := &ledger{max: max, now: now, done: make(chan struct{})}
	l.ready.L, l.space.L = &l.mu, &l.mu
	if l.max <= 0 {
		l.max = DefaultLedgerMax
	}
	if path != "" {
		fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_APPEND|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		if err != nil {
			return nil, fmt.Errorf("gateway ledger: %w", &os.PathError{Op: "open", Path: path, Err: err})
		}
		l.f = os.NewFile(uintptr(fd), path)
		if _, err := fsx.RepairTail(l.f); err != nil {
			l.f.Close()
			return nil, fmt.Errorf("gateway ledger: %w", err)
		}
		if st, err := l.f.Stat(); err == nil {
			l.queued = st.Size()
		}
	}
	go l.run()
	return l, nil
}

// add stamps e with the next seq and queues its line, unless the cap is
// reached (then it counts it).
func (l *ledger) add(e runs.LedgerEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.pending) >= maxPending && !l.closed {
		l.space.Wait()
	}
	if l.closed {
		return
	}
	l.seq++
	e.Seq = l.seq
	was := len(l.pending)
	l.pending = appendEntry(l.pending, &e)
	if len(l.pending) == was {
		return // json.Marshal could not write it either
	}
	l.pending = append(l.pending, '\n')
	n := int64(len(l.pending) - was)
	if cap := l.capFor(&e); l.queued+n > cap {
		l.pending = l.pending[:was]
		l.dropped++
		return
	}
	l.queued += n
	if was == 0 {
		l.ready.Signal()
	}
}

// capFor is the size a line may take the ledger to: the soft cap for an
// allowed tunnel or http line, four times it for what must not be hidden
// (a model call, a git request, any refusal), so a flood of cheap lines
// cannot push a later refusal or spend out of the record.
func (l *ledger) capFor(e *runs.LedgerEntry) int64 {
	if e.Decision == "refused" || e.Kind == "model" || e.Kind == "git" {
		return HardCapFactor * l.max
	}
	return l.max
}

// HardCapFactor is the ledger's hard cap, in soft caps.
const HardCapFactor = 4

func (l *ledger) run() {
	defer close(l.done)
	var buf []byte
	l.mu.Lock()
	for {
		for len(l.pending) == 0 && !l.closed {
			l.ready.Wait()
		}
		if len(l.pending) == 0 {
			l.mu.Unlock()
			return
		}
		buf, l.pending = l.pending, buf[:0]
		l.space.Broadcast()
		l.mu.Unlock()
		l.flush(buf)
		l.mu.Lock()
	}
}

func (l *ledger) flush(buf []byte) {
	if len(buf) == 0 || l.f == nil {
		return
	}
	_, err := l.f.Write(buf)
	if err == nil {
		err = l.f.Sync()
	}
	if err != nil && l.err == nil {
		l.err = fmt.Errorf("gateway ledger %s: %w", l.f.Name(), err)
	}
}

// close lets the writer drain the pending lines, adds the capped marker if
// lines were dropped, syncs and closes the file.
func (l *ledger) close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		<-l.done
		return l.err
	}
	l.closed = true
	l.ready.Signal()
	l.space.Broadcast()
	seq := l.seq + 1
	l.mu.Unlock()
	<-l.done
	if l.dropped > 0 && l.f != nil {
		if line := appendEntry(nil, &runs.LedgerEntry{Seq: seq, At: l.now().UTC(), Kind: "capped", Decision: "capped", Dropped: l.dropped}); len(line) > 0 {
			l.f.Write(append(line, '\n')) // past the cap by this one line, so it is always there
			l.f.Sync()
		}
	}
	if l.f != nil {
		if err := l.f.Close(); err != nil && l.err == nil {
			l.err = err
		}
	}
	return l.err
}

// appendEntry appends e as encoding/json marshals it (the same bytes,
// field for field; TestLedgerLineIsEncodingJSONs holds it to that),
// without reflection or allocation (strings by jsonw.AppendString, HTML
// escaped as json.Marshal does); a time json.Marshal refuses (outside RFC 3339's years or
// zone offsets) makes no line, as it did. A cost that is not a
// number (a price of NaN or Inf in org.toml) is left out, where
// json.Marshal would refuse the line and the request would be missing
// from the ledger.
func appendEntry(b []byte, e *runs.LedgerEntry) []byte {
	if y := e.At.Year(); y < 0 || y > 9999 {
		return b // json.Marshal refuses it: not RFC 3339
	}
	if _, off := e.At.Zone(); off <= -24*3600 || off >= 24*3600 {
		return b // likewise
	}
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, e.Seq, 10)
	b = append(b, `,"at":"`...)
	b = e.At.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","kind":`...)
	b = jsonw.AppendString(b, e.Kind, true)
	if e.Open {
		b = append(b, `,"open":true`...)
	}
	if e.Provider != "" {
		b = append(b, `,"provider":`...)
		b = jsonw.AppendString(b, e.Provider, true)
	}
	b = append(b, `,"method":`...)
	b = jsonw.AppendString(b, e.Method, true)
	b = append(b, `,"host":`...)
	b = jsonw.AppendString(b, e.Host, true)
	if e.Port != 0 {
		b = append(b, `,"port":`...)
		b = strconv.AppendInt(b, int64(e.Port), 10)
	}
	if e.Path != "" {
		b = append(b, `,"path":`...)
		b = jsonw.AppendString(b, e.Path, true)
	}
	b = append(b, `,"decision":`...)
	b = jsonw.AppendString(b, e.Decision, true)
	if e.Refusal != "" {
		b = append(b, `,"refusal":`...)
		b = jsonw.AppendString(b, e.Refusal, true)
	}
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(e.Status), 10)
	b = append(b, `,"bytes_up":`...)
	b = strconv.AppendInt(b, e.BytesUp, 10)
	b = append(b, `,"bytes_down":`...)
	b = strconv.AppendInt(b, e.BytesDn, 10)
	b = append(b, `,"ms":`...)
	b = strconv.AppendInt(b, e.MS, 10)
	if e.Model != "" {
		b = append(b, `,"model":`...)
		b = jsonw.AppendString(b, e.Model, true)
	}
	for _, f := range [...]struct {
		name string
		v    int64
	}{{`,"input_tokens":`, e.InputTokens}, {`,"output_tokens":`, e.OutputTokens},
		{`,"cache_read_tokens":`, e.CacheReadTokens}, {`,"cache_write_tokens":`, e.CacheWriteTokens}} {
		if f.v != 0 {
			b = append(b, f.name...)
			b = strconv.AppendInt(b, f.v, 10)
		}
	}
	if c := e.CostUSD; c != nil && !math.IsNaN(*c) && !math.IsInf(*c, 0) {
		b = append(b, `,"cost_usd":`...)
		b = appendJSONFloat(b, *c)
	}
	if e.RequestID != "" {
		b = append(b, `,"request_id":`...)
		b = jsonw.AppendString(b, e.RequestID, true)
	}
	if e.Estimated {
		b = append(b, `,"estimated":true`...)
	}
	b = appendGit(b, e)
	if e.Dropped != 0 {
		b = append(b, `,"dropped":`...)
		b = strconv.AppendInt(b, e.Dropped, 10)
	}
	return append(b, '}')
}

// appendGit adds a git request's repo, service and refs.
func appendGit(b []byte, e *runs.LedgerEntry) []byte {
	if e.Repo != "" {
		b = append(b, `,"repo":`...)
		b = jsonw.AppendString(b, e.Repo, true)
	}
	if e.Service != "" {
		b = append(b, `,"service":`...)
		b = jsonw.AppendString(b, e.Service, true)
	}
	if len(e.Refs) == 0 {
		return b
	}
	b = append(b, `,"refs":[`...)
	for i, r := range e.Refs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		if r.Repo != "" {
			b = append(b, `"repo":`...)
			b = jsonw.AppendString(b, r.Repo, true)
			b = append(b, ',')
		}
		b = append(b, `"ref":`...)
		b = jsonw.AppendString(b, r.Ref, true)
		b = append(b, `,"old":`...)
		b = jsonw.AppendString(b, r.Old, true)
		b = append(b, `,"new":`...)
		b = jsonw.AppendString(b, r.New, true)
		b = append(b, `,"outcome":`...)
		b = jsonw.AppendString(b, r.Outcome, true)
		if r.Refusal != "" {
			b = append(b, `,"refusal":`...)
			b = jsonw.AppendString(b, r.Refusal, true)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendJSONFloat formats f as encoding/json does (ES6 number style).
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9, as encoding/json does
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
