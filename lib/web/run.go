package web

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
	"github.com/roster-sh/roster/lib/transcript"
)

// Bounds of what a run page shows whole.
const (
	maxLedgerRows = 2000      // ledger lines as a table; the rest counted
	maxChanges    = 256 << 10 // bytes of store-changes.txt
	flushEvery    = 200       // entries between flushes of the streamed transcript
)

// runData is the top of a run page: the record and what it says, the
// ledger, the change list. The transcript follows, streamed.
type runData struct {
	runs.Entry
	R        *runs.Record
	Err      string
	State    string
	Started  string
	Ended    string
	Evidence string
	Refusals string
	Pushes   []pushRow
	Ledger   []ledgerRow
	LedgerN  int    // lines in the ledger
	LedgerX  string // why the ledger could not be read
	Changes  string
	ChangesX string // more bytes not shown, or why it could not be read
	Live     bool
}

type pushRow struct {
	runs.GitRef
	Gated bool
}

// ledgerRow is one ledger line: a request the gateway served or refused.
type ledgerRow struct {
	runs.LedgerEntry
	At      string
	Bad     string // the line is not an entry: why
	Refused bool
}

func (s *Server) runPage(w http.ResponseWriter, r *http.Request) {
	e, err := runs.Resolve(s.cfg.Home, r.PathValue("run"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	org, err := config.LoadOrg(s.cfg.Home)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d := runInfo(e, org.Zone())
	p := s.page(r, "run "+e.ID, d)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := s.tpl.ExecuteTemplate(w, "run-top", p); err != nil {
		return // the connection's; nothing more can be said on a page begun
	}
	agent := ""
	if d.R != nil && d.R.Agent != nil {
		agent = d.R.Agent.Name
	}
	off, terr := s.streamTranscript(w, e.Dir, agent)
	bottom := map[string]any{"Page": p, "TranscriptErr": "", "Offset": off, "Live": d.Live}
	if terr != nil {
		bottom["TranscriptErr"] = terr.Error()
	}
	s.tpl.ExecuteTemplate(w, "run-bottom", bottom)
}

func runInfo(e runs.Entry, zone *time.Location) *runData {
	d := &runData{Entry: e, R: e.Record, State: runState(e), Started: when(e.Started(), zone)}
	d.Live = d.State == "live" || d.State == "starting"
	if e.Err != nil {
		d.Err = e.Err.Error()
	}
	if r := e.Record; r != nil {
		if r.EndedAt != nil {
			d.Ended = when(*r.EndedAt, zone)
		}
		if r.Evidence != nil {
			d.Evidence = evidenceWithGateway(r.Evidence)
		}
		if r.Gateway != nil {
			d.Refusals = refusals(r.Gateway)
		}
		if r.Git != nil {
			for _, p := range r.Git.Pushes {
				d.Pushes = append(d.Pushes, pushRow{GitRef: p, Gated: p.Outcome == "gated"})
			}
		}
	}
	readLedger(d, zone)
	readChanges(d)
	return d
}

// readLedger reads the gateway's ledger into rows, at most maxLedgerRows
// of them (memory bounded by the scanner whatever the file holds).
func readLedger(d *runData, zone *time.Location) {
	err := runs.ScanLedger(d.Dir, func(l runs.LedgerLine) error {
		d.LedgerN++
		if len(d.Ledger) >= maxLedgerRows || l.Torn {
			return nil
		}
		row := ledgerRow{LedgerEntry: l.Entry}
		if l.Err != nil {
			row.Bad = l.Err.Error()
		} else {
			row.At = l.Entry.At.In(zone).Format("15:04:05")
			row.Refused = l.Entry.Decision == "refused"
		}
		d.Ledger = append(d.Ledger, row)
		return nil
	})
	if err != nil && !notExist(err) {
		d.LedgerX = err.Error()
	}
}

func readChanges(d *runData) {
	f, err := fsx.OpenRegular(home.StoreChanges(d.Dir))
	if err != nil {
		if !notExist(err) {
			d.ChangesX = err.Error()
		}
		return
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxChanges+1))
	if err != nil {
		d.ChangesX = err.Error()
		return
	}
	if len(b) > maxChanges {
		b = b[:maxChanges]
		d.ChangesX = "cut at 256 KiB: roster-runs changes " + d.ID + " prints it whole"
	}
	d.Changes = string(b)
}

// streamTranscript renders the run's transcript entry by entry as it
// reads it, flushing as it goes; it returns how many bytes it read (where
// a live page's events go on from).
func (s *Server) streamTranscript(w http.ResponseWriter, runDir, agent string) (int64, error) {
	f, err := fsx.OpenRegular(home.Transcript(runDir))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fl, _ := w.(http.Flusher)
	cr := &countReader{r: f}
	n := 0
	err = eachEntry(cr, agent, func(e entry) error {
		if err := s.tpl.ExecuteTemplate(w, "entry", e); err != nil {
			return err
		}
		if n++; n%flushEvery == 0 && fl != nil {
			fl.Flush()
		}
		return nil
	})
	return cr.n, err
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// evidenceWithGateway is roster-runs show's evidence line and, on the
// page, the gateway's refusals the verdict counted.
func evidenceWithGateway(ev *runs.Evidence) string {
	s := ev.Summary()
	if ev.GatewayRefused > 0 {
		s += fmt.Sprintf(", %d gateway refusals (%s)", ev.GatewayRefused, ev.GatewayRefusals)
	}
	return s
}

func refusals(g *runs.GatewaySummary) string {
	kinds := make([]string, 0, len(g.Refusals))
	for k, n := range g.Refusals {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(kinds)
	return strings.Join(kinds, ", ")
}

// runEvents follows a live run's transcript from byte ?from= as
// server-sent events: each complete line's entries as one "entry" event
// (JSON; the page inserts their text as text, never as markup), then
// "end" once the run is over.
func (s *Server) runEvents(w http.ResponseWriter, r *http.Request) {
	e, err := runs.Resolve(s.cfg.Home, r.PathValue("run"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var from int64
	fmt.Sscan(r.URL.Query().Get("from"), &from)
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "roster-web: streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	agent := ""
	if e.Record != nil && e.Record.Agent != nil {
		agent = e.Record.Agent.Name
	}
	t := &tail{dir: e.Dir, off: from}
	defer t.close()
	for {
		over := runs.Finished(e.Dir) // before the read: nothing written before the end is missed
		if err := t.send(w, agent, over); err != nil {
			fmt.Fprintf(w, "event: problem\ndata: %s\n\n", oneLine(err.Error()))
			fl.Flush()
			return
		}
		if over {
			fmt.Fprint(w, "event: end\ndata: run over\n\n")
			fl.Flush()
			return
		}
		fl.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-time.After(s.cfg.Poll):
		}
	}
}

// maxLiveLine bounds one line the live view decodes as an agent event; a
// longer one is passed over and said in one note of its length (the page,
// reloaded, renders it as roster-runs log does).
const maxLiveLine = 1 << 20

// tail reads a transcript from off, complete lines only (the rest waits
// for its newline, or the run's end).
type tail struct {
	dir  string
	off  int64
	f    *os.File
	long int64 // > 0: bytes so far of an overlong line being passed over
}

func (t *tail) close() {
	if t.f != nil {
		t.f.Close()
	}
}

func (t *tail) send(w io.Writer, agent string, over bool) error {
	if t.f == nil {
		f, err := fsx.OpenRegular(home.Transcript(t.dir))
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		t.f = f
	}
	if _, err := t.f.Seek(t.off, io.SeekStart); err != nil {
		return err
	}
	br := bufio.NewReaderSize(t.f, maxLiveLine)
	for sent := 0; sent < 1<<20; {
		line, err := br.ReadSlice('\n')
		full := errors.Is(err, bufio.ErrBufferFull)
		if t.long > 0 || full {
			// An overlong line: passed over to its end, then said once.
			t.off += int64(len(line))
			sent += len(line)
			t.long += int64(len(line))
			if full || (errors.Is(err, io.EOF) && !over) {
				if err != nil && !full {
					return nil // its end is not written yet
				}
				continue
			}
			n := t.long
			if err == nil {
				n-- // the newline
			}
			t.long = 0
			note := entry{Kind: transcript.Raw, Text: fmt.Sprintf("[roster: a line of %d bytes, too long to follow live: reload the page, or roster-runs log --raw]", n)}
			if err := sendEntry(w, note); err != nil {
				return err
			}
			if err != nil {
				return ignoreEOF(err)
			}
			continue
		}
		if errors.Is(err, io.EOF) && over && len(line) > 0 {
			err = nil // the last line, without its newline: sent as it is
		} else if err != nil {
			return ignoreEOF(err)
		}
		t.off += int64(len(line))
		sent += len(line)
		if err := eachEntry(strings.NewReader(string(line)), agent, func(e entry) error { return sendEntry(w, e) }); err != nil {
			return err
		}
	}
	return nil
}

func ignoreEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

func oneLine(s string) string { return strings.NewReplacer("\n", " ", "\r", " ").Replace(s) }

func sendEntry(w io.Writer, e entry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "event: entry\ndata: %s\n\n", b)
	return err
}
