package tms

// The journal's scrub, a forget's last step (forget.go): every line about
// the channel keeps its seq, event and ids, not its words.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
)

// forgetScrub rewrites the journal so that every line about in's channel
// keeps its seq, event and ids but not its words, cancels any task of the
// channel filed since the first step, writes tasks.json and the view, and
// ends the journal with the `forgotten` line (once per forget), all under
// the partition lock. The journal is replaced whole (atomically), never
// appended to in place.
func (p *Partition) forgetScrub(ctx context.Context, in *intent) (int, error) {
	t, err := p.begin(ctx)
	if err != nil {
		return 0, err
	}
	defer t.end()
	channel := in.Channel
	enc, _ := home.EncodeChannel(channel)
	n, err := t.cancelChannel(channel)
	if err != nil {
		return 0, err
	}
	in.Counts.Tasks += n
	if err := t.syncSpec(); err != nil {
		return 0, err
	}
	data, err := os.ReadFile(p.W.Journal())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	lines, err := decodeAll(p.W.Journal(), data)
	if err != nil {
		return 0, err
	}
	// The lines this change adds (cancels) count too.
	for _, b := range t.out {
		l, err := DecodeLine(b)
		if err != nil {
			return 0, err
		}
		lines = append(lines, rawLine{raw: b, line: l})
	}
	ids, runIDs := channelTasks(lines, channel)
	done := false
	var out bytes.Buffer
	scrubbed := 0
	for _, l := range lines {
		if l.line.Event == EvForgotten && l.line.Forgot != nil && l.line.Forgot.ID == in.Counts.ID {
			done = true
		}
		if aboutChannel(l.line, ids, runIDs) && scrubLine(l.line, ids) {
			b, err := json.Marshal(l.line)
			if err != nil {
				return 0, err
			}
			out.Write(b)
			scrubbed++
		} else {
			out.Write(l.raw)
		}
		out.WriteByte('\n')
	}
	in.Counts.Lines += scrubbed
	if !done && in.Counts == (ForgetCounts{ID: in.Counts.ID}) && forgottenBefore(lines, enc) {
		done = true // forgotten already, and nothing was left: no line says so again
	}
	if !done {
		t.seq++
		c := in.Counts
		fl := Line{Seq: t.seq, At: t.now, Event: EvForgotten, By: ByOwner, Channel: enc, Forgot: &c}
		b, err := json.Marshal(fl)
		if err != nil {
			return 0, err
		}
		out.Write(b)
		out.WriteByte('\n')
	}
	if err := fsx.WriteFile(p.W.Journal(), out.Bytes(), 0o600); err != nil {
		return 0, err
	}
	// The lines moved: the history index points into the old journal.
	// Its next reader would find it stale anyway (history.go); removed,
	// it is simply rebuilt.
	if err := os.Remove(p.W.TasksIndex()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	t.out = nil
	for i := range t.f.Tasks {
		if t.f.Tasks[i].Channel == channel { // cannot be: canceled above
			return 0, fmt.Errorf("task %s of channel %q still in tasks.json", t.f.Tasks[i].ID, channel)
		}
	}
	t.f.Version = t.ver
	return scrubbed, p.writeViews(t.f, t.now)
}

// forgottenBefore reports whether a `forgotten` line of enc is among lines.
func forgottenBefore(lines []rawLine, enc string) bool {
	for _, l := range lines {
		if l.line.Event == EvForgotten && l.line.Channel == enc {
			return true
		}
	}
	return false
}

// rawLine is a journal line as read and as decoded.
type rawLine struct {
	raw  []byte
	line *Line
}

// decodeAll decodes a journal's complete lines (a torn last one is left
// out); any bad line is a refusal.
func decodeAll(path string, data []byte) ([]rawLine, error) {
	var out []rawLine
	for i, raw := range fsx.SplitLines(data) {
		l, err := DecodeLine(raw)
		if err != nil {
			return nil, refused(path, "line %d: %v", i+1, err)
		}
		out = append(out, rawLine{raw: raw, line: l})
	}
	return out, nil
}

// channelTasks returns the ids of every task whose record names channel,
// and the runs claimed for them or that finished them.
func channelTasks(lines []rawLine, channel string) (map[string]bool, map[string]bool) {
	ids, rs := map[string]bool{}, map[string]bool{}
	for _, l := range lines {
		for _, r := range l.line.Records {
			if r.Task != nil && r.Task.Channel == channel {
				ids[r.Task.ID] = true
			}
		}
	}
	for _, l := range lines {
		if l.line.Run != "" && ids[l.line.Task] {
			rs[l.line.Run] = true
		}
		for _, r := range l.line.Records {
			if r.Task != nil && ids[r.Task.ID] {
				if r.Task.Claim != nil {
					rs[r.Task.Claim.Run] = true
				}
				if r.Task.LastRun != "" {
					rs[r.Task.LastRun] = true
				}
			}
		}
	}
	return ids, rs
}

// aboutChannel reports whether l is about the channel: its task, one of
// its records, or its run is the channel's.
func aboutChannel(l *Line, ids, runIDs map[string]bool) bool {
	if ids[l.Task] || (l.Run != "" && runIDs[l.Run]) {
		return true
	}
	for _, r := range l.Records {
		if r.Task != nil && ids[r.Task.ID] {
			return true
		}
	}
	return false
}

// scrubLine replaces l's words in place: the text, sender and gates of
// the channel's task records, and the line's reasons, evidence notes and
// refusal reasons. It reports whether anything changed (a line already
// scrubbed does not).
func scrubLine(l *Line, ids map[string]bool) bool {
	changed := false
	word := func(s *string) {
		if *s != "" && *s != ForgottenText {
			*s = ForgottenText
			changed = true
		}
	}
	for _, r := range l.Records {
		if r.Task == nil || !ids[r.Task.ID] {
			continue
		}
		word(&r.Task.Text)
		word(&r.Task.From)
		for i := range r.Task.Gates {
			word(&r.Task.Gates[i].What)
			word(&r.Task.Gates[i].Why)
		}
	}
	if l.Reason != ReasonForgotten {
		word(&l.Reason)
	}
	if l.Evidence != nil {
		word(&l.Evidence.Reason)
		word(&l.Evidence.Note)
	}
	if a := l.Action; a != nil {
		if strings.HasPrefix(a.Outcome, "refused: ") && a.Outcome != "refused: "+ForgottenText {
			a.Outcome = "refused: " + ForgottenText
			changed = true
		}
		for i := range a.Refused {
			word(&a.Refused[i].Reason)
		}
	}
	return changed
}
