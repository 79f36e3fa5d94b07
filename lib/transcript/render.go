package transcript

import (
	"encoding/json"
	"errors"
	"io"
)

// Copy renders the transcript r to w: as text for a reader, or, with
// asJSON, one entry a line, whole.
func Copy(w io.Writer, r io.Reader, agent string, asJSON bool) error {
	rd := NewReader(r, agent)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	p := NewPrinter(w)
	for {
		e, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if asJSON {
			err = enc.Encode(e)
		} else {
			err = p.Print(e)
		}
		if err != nil {
			return err
		}
	}
}

// Writer renders what is written to it, as Copy does, as its lines
// arrive (roster-runs log --follow). Close renders a last partial line and
// returns the first error.
type Writer struct {
	pw   *io.PipeWriter
	done chan error
}

// NewWriter renders into w.
func NewWriter(w io.Writer, agent string, asJSON bool) *Writer {
	pr, pw := io.Pipe()
	rw := &Writer{pw: pw, done: make(chan error, 1)}
	go func() {
		err := Copy(w, pr, agent, asJSON)
		pr.CloseWithError(err) // a writer blocked on a failed w returns
		rw.done <- err
	}()
	return rw
}

func (w *Writer) Write(p []byte) (int, error) { return w.pw.Write(p) }

// Close ends the input and waits for the rendering to finish.
func (w *Writer) Close() error {
	w.pw.Close()
	return <-w.done
}
