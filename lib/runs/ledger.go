package runs

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/fsx"
)

// LedgerMaxLine bounds one line a ledger reader accepts; a longer line is
// reported and skipped, never held in memory whole. The gateway's own
// lines are far shorter (no header value or body is ever written).
const LedgerMaxLine = 1 << 20

// LedgerLine is one line of a gateway ledger as ScanLedger read it.
type LedgerLine struct {
	N     int         // 1-based line number
	Raw   []byte      // the line as it is, without its newline (nil for one too long); valid only during the callback
	Entry LedgerEntry // decoded, when Err is nil
	Err   error       // why the line is not a ledger entry (not JSON, not an object, a bad field, too long)
	Torn  bool        // the last line, without its newline: cut short by a crash, or being appended now
}

// ErrLedgerLine is wrapped by a LedgerLine's Err.
var ErrLedgerLine = errors.New("not a ledger entry")

// ScanLedger calls fn for every line of runDir's gateway.jsonl in order,
// with memory bounded by LedgerMaxLine whatever the file holds. A line
// that is not an entry comes with Err set (fn decides whether to go on); a
// last line without its newline comes with Torn set and is never decoded
// as an entry. It stops at fn's first error and returns it. A missing
// ledger is os.ErrNotExist; a planted link or FIFO is refused.
func ScanLedger(runDir string, fn func(LedgerLine) error) error {
	f, err := fsx.OpenRegular(GatewayLedger(runDir))
	if err != nil {
		return err
	}
	defer f.Close()
	return scanLedger(f, fn)
}

func scanLedger(r io.Reader, fn func(LedgerLine) error) error {
	br := bufio.NewReaderSize(r, LedgerMaxLine+1)
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		long := false
		for errors.Is(err, bufio.ErrBufferFull) {
			long = true // skip to this line's end, keeping nothing
			_, err = br.ReadSlice('\n')
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if len(line) == 0 && !long && err != nil {
			return nil // the end, after a newline
		}
		l := LedgerLine{N: n}
		switch {
		case err != nil: // io.EOF before a newline
			l.Torn = true
			if !long {
				l.Raw = line
			}
			l.Err = fmt.Errorf("line %d: no newline at its end (a write cut short): %w", n, ErrLedgerLine)
		case long:
			l.Err = fmt.Errorf("line %d: longer than %d bytes: %w", n, LedgerMaxLine, ErrLedgerLine)
		default:
			l.Raw = line[:len(line)-1]
			l.Entry, l.Err = decodeLedgerLine(l.Raw)
			if l.Err != nil {
				l.Err = fmt.Errorf("line %d: %v: %w", n, l.Err, ErrLedgerLine)
			}
		}
		if ferr := fn(l); ferr != nil {
			return ferr
		}
		if err != nil {
			return nil
		}
	}
}

// decodeLedgerLine decodes one line, refusing what no gateway writes: not
// an object, negative counts.
func decodeLedgerLine(raw []byte) (LedgerEntry, error) {
	var e LedgerEntry
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' {
		return e, errors.New("not a JSON object")
	}
	if err := json.Unmarshal(t, &e); err != nil {
		return LedgerEntry{}, err
	}
	if e.InputTokens < 0 || e.OutputTokens < 0 || e.CacheReadTokens < 0 || e.CacheWriteTokens < 0 ||
		e.BytesUp < 0 || e.BytesDn < 0 || e.MS < 0 || (e.CostUSD != nil && *e.CostUSD < 0) {
		return LedgerEntry{}, errors.New("a negative count")
	}
	return e, nil
}

// DropTornLedgerTail is fsx.RepairTail on runDir's gateway.jsonl, for the
// end of a run whose supervisor was killed (nobody appends to it again);
// a missing ledger is no error, a planted link or FIFO is refused.
func DropTornLedgerTail(runDir string) error {
	fd, err := unix.Open(GatewayLedger(runDir), unix.O_RDWR|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return &os.PathError{Op: "open", Path: GatewayLedger(runDir), Err: err}
	}
	f := os.NewFile(uintptr(fd), GatewayLedger(runDir))
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return err
	} else if !st.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", GatewayLedger(runDir))
	}
	_, err = fsx.RepairTail(f)
	return err
}
