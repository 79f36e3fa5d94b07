package tms

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// Encoding. Each appender writes exactly what an encoding/json Encoder
// with SetEscapeHTML(false) writes for the value (without its newline).

// appendStr quotes s; strings that need escaping take encoding/json's path.
func appendStr(b []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == '"' || c == '\\' {
				return appendStrSlow(b, s)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || r == '\u2028' || r == '\u2029' {
			return appendStrSlow(b, s)
		}
		i += n
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func appendStrSlow(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

func appendTime(b []byte, t time.Time) ([]byte, error) {
	j, err := t.MarshalJSON()
	if err != nil {
		return b, err
	}
	return append(b, j...), nil
}

type fenc struct {
	b   []byte
	err error
}

func (e *fenc) raw(s string)      { e.b = append(e.b, s...) }
func (e *fenc) str(key, v string) { e.raw(key); e.b = appendStr(e.b, v) }
func (e *fenc) optStr(key, v string) {
	if v != "" {
		e.str(key, v)
	}
}
func (e *fenc) int(key string, v int) { e.raw(key); e.b = strconv.AppendInt(e.b, int64(v), 10) }
func (e *fenc) time(key string, t time.Time) {
	e.raw(key)
	var err error
	if e.b, err = appendTime(e.b, t); err != nil && e.err == nil {
		e.err = err
	}
}
func (e *fenc) optTime(key string, t *time.Time) {
	if t != nil {
		e.time(key, *t)
	}
}

func appendTask(b []byte, t *Task) ([]byte, error) {
	e := fenc{b: b}
	e.str(`{"id":`, t.ID)
	e.str(`,"text":`, t.Text)
	e.str(`,"kind":`, t.Kind)
	e.str(`,"standing":`, t.Standing)
	e.str(`,"state":`, t.State)
	e.time(`,"created_at":`, t.CreatedAt)
	e.optTime(`,"scheduled_at":`, t.ScheduledAt)
	if len(t.DependsOn) > 0 {
		e.raw(`,"depends_on":[`)
		for i, s := range t.DependsOn {
			if i > 0 {
				e.raw(",")
			}
			e.b = appendStr(e.b, s)
		}
		e.raw("]")
	}
	if len(t.Settled) > 0 {
		e.raw(`,"settled":{`)
		for i, k := range sortedKeys(t.Settled) {
			if i > 0 {
				e.raw(",")
			}
			e.b = appendStr(e.b, k)
			e.str(":", t.Settled[k])
		}
		e.raw("}")
	}
	e.optStr(`,"ceiling":`, t.Ceiling)
	e.optStr(`,"channel":`, t.Channel)
	e.optStr(`,"from":`, t.From)
	e.optStr(`,"msg":`, t.Msg)
	e.optStr(`,"template":`, t.Template)
	e.optTime(`,"slot":`, t.Slot)
	e.int(`,"priority":`, t.Priority)
	e.str(`,"by":`, t.By)
	e.int(`,"attempts":`, t.Attempts)
	if t.Retries != 0 {
		e.int(`,"retries":`, t.Retries)
	}
	if t.Retried != 0 {
		e.int(`,"retried":`, t.Retried)
	}
	if t.Claim != nil {
		e.str(`,"claim":{"run":`, t.Claim.Run)
		e.time(`,"at":`, t.Claim.At)
		e.raw("}")
	}
	if len(t.Gates) > 0 {
		e.raw(`,"gates":[`)
		for i := range t.Gates {
			g := &t.Gates[i]
			if i > 0 {
				e.raw(",")
			}
			e.str(`{"id":`, g.ID)
			e.str(`,"what":`, g.What)
			e.str(`,"state":`, g.State)
			if g.Wake {
				e.raw(`,"wake":true`)
			}
			e.optStr(`,"why":`, g.Why)
			e.optTime(`,"resolved_at":`, g.ResolvedAt)
			e.optStr(`,"kind":`, g.Kind)
			if p := g.Push; p != nil {
				e.str(`,"push":{"repo":`, p.Repo)
				e.str(`,"ref":`, p.Ref)
				e.str(`,"old":`, p.Old)
				e.str(`,"new":`, p.New)
				e.str(`,"pending":`, p.Pending)
				e.raw("}")
			}
			e.raw("}")
		}
		e.raw("]")
	}
	e.optStr(`,"continues":`, t.Continues)
	e.optStr(`,"refiled_from":`, t.RefiledFrom)
	e.optStr(`,"filed_by":`, t.FiledBy)
	e.optStr(`,"last_run":`, t.LastRun)
	e.optTime(`,"finished_at":`, t.FinishedAt)
	e.raw("}")
	return e.b, e.err
}

func appendTemplate(b []byte, t *Template) ([]byte, error) {
	e := fenc{b: b}
	e.str(`{"id":`, t.ID)
	if t.System {
		e.raw(`,"system":true`)
	}
	e.str(`,"cron":`, t.Cron)
	e.str(`,"text":`, t.Text)
	e.str(`,"standing":`, t.Standing)
	e.str(`,"by":`, t.By)
	e.str(`,"window":`, t.Window)
	e.str(`,"catch_up":`, t.CatchUp)
	e.str(`,"overlap":`, t.Overlap)
	e.str(`,"ceiling":`, t.Ceiling)
	if t.Priority != 0 {
		e.int(`,"priority":`, t.Priority)
	}
	if t.Retries != 0 {
		e.int(`,"retries":`, t.Retries)
	}
	e.optStr(`,"channel":`, t.Channel)
	e.optTime(`,"cursor":`, t.Cursor)
	if t.Disabled {
		e.raw(`,"disabled":true`)
	}
	if l := t.Last; l != nil {
		e.str(`,"last":{"task":`, l.Task)
		e.time(`,"at":`, l.At)
		e.str(`,"state":`, l.State)
		e.optStr(`,"run":`, l.Run)
		e.raw("}")
	}
	e.raw("}")
	return e.b, e.err
}
