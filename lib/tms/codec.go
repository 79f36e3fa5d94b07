package tms

import (
	"bytes"
	"time"
)

// A fast path for tasks.json: every command reads the whole file and most
// write it back, so decoding and encoding it dominates their cost once a
// partition holds thousands of tasks (encoding/json spends most of its time
// in reflection and validating the text twice).
//
// decodeFast accepts only the subset of JSON the writer produces (known
// keys spelled exactly, each at most once, no null, integers without
// fraction or exponent) and says ok=false for anything else, which then
// goes to encoding/json. So it never accepts text encoding/json would
// refuse, nor reads text differently: FuzzFastDecode pins both.
// appendTask and appendTemplate write the bytes encoding/json writes (with
// HTML escaping off), pinned by FuzzFastDecode and TestFastEncodeMatchesJSON.
//
// What it buys (2026-12-01, 2 cores, go test -bench 'Add1000$|Add10000|
// Decode10000' ./lib/tms, against a build whose decodeRaw and decodeFast
// always say no and whose appendTask and appendTemplate call
// encoding/json): Add with 1,000 pending tasks 9 ms instead of 28–33 ms,
// with 10,000 pending 41–59 ms instead of 196–460 ms (the targets of
// bench/tasks.sh are 10 ms and 50 ms); decoding a 10,000-task tasks.json
// 7.5 ms instead of 129 ms.

func (d *fdec) claim(p **Claim) bool {
	c := new(Claim)
	*p = c
	return d.object(func(k []byte, seen *uint32) bool {
		switch string(k) {
		case "run":
			return once(seen, 0) && d.str(&c.Run)
		case "at":
			return once(seen, 1) && d.time(&c.At)
		}
		return false
	})
}

func (d *fdec) gate(g *Gate) bool {
	return d.object(func(k []byte, seen *uint32) bool {
		switch string(k) {
		case "id":
			return once(seen, 0) && d.str(&g.ID)
		case "what":
			return once(seen, 1) && d.str(&g.What)
		case "state":
			return once(seen, 2) && d.str(&g.State)
		case "wake":
			return once(seen, 3) && d.boolean(&g.Wake)
		case "why":
			return once(seen, 4) && d.str(&g.Why)
		case "resolved_at":
			return once(seen, 5) && d.timePtr(&g.ResolvedAt)
		case "kind":
			return once(seen, 6) && d.str(&g.Kind)
		case "push":
			g.Push = &RepoPush{}
			return once(seen, 7) && d.repoPush(g.Push)
		}
		return false
	})
}

func (d *fdec) repoPush(p *RepoPush) bool {
	return d.object(func(k []byte, seen *uint32) bool {
		switch string(k) {
		case "repo":
			return once(seen, 0) && d.str(&p.Repo)
		case "ref":
			return once(seen, 1) && d.str(&p.Ref)
		case "old":
			return once(seen, 2) && d.str(&p.Old)
		case "new":
			return once(seen, 3) && d.str(&p.New)
		case "pending":
			return once(seen, 4) && d.str(&p.Pending)
		}
		return false
	})
}

func (d *fdec) task(t *Task) bool {
	return d.object(func(k []byte, seen *uint32) bool {
		switch string(k) {
		case "id":
			skip := d.skip
			d.skip = false
			ok := once(seen, 0) && d.str(&t.ID)
			d.skip = skip
			return ok
		case "text":
			return once(seen, 1) && d.str(&t.Text)
		case "kind":
			return once(seen, 2) && d.enum(&t.Kind)
		case "standing":
			return once(seen, 3) && d.enum(&t.Standing)
		case "state":
			return once(seen, 4) && d.enum(&t.State)
		case "created_at":
			return once(seen, 5) && d.time(&t.CreatedAt)
		case "scheduled_at":
			return once(seen, 6) && d.timePtr(&t.ScheduledAt)
		case "depends_on":
			return once(seen, 7) && d.strings(&t.DependsOn)
		case "settled":
			return once(seen, 8) && d.stringMap(&t.Settled)
		case "ceiling":
			return once(seen, 9) && d.str(&t.Ceiling)
		case "channel":
			return once(seen, 10) && d.str(&t.Channel)
		case "from":
			return once(seen, 11) && d.str(&t.From)
		case "msg":
			return once(seen, 26) && d.str(&t.Msg)
		case "template":
			return once(seen, 12) && d.str(&t.Template)
		case "slot":
			return once(seen, 13) && d.timePtr(&t.Slot)
		case "priority":
			return once(seen, 14) && d.int(&t.Priority)
		case "by":
			return once(seen, 15) && d.enum(&t.By)
		case "attempts":
			return once(seen, 16) && d.int(&t.Attempts)
		case "retries":
			return once(seen, 24) && d.int(&t.Retries)
		case "retried":
			return once(seen, 25) && d.int(&t.Retried)
		case "claim":
			return once(seen, 17) && d.claim(&t.Claim)
		case "gates":
			if !once(seen, 18) {
				return false
			}
			t.Gates = []Gate{}
			return d.array(func() bool {
				t.Gates = append(t.Gates, Gate{})
				return d.gate(&t.Gates[len(t.Gates)-1])
			})
		case "continues":
			return once(seen, 19) && d.str(&t.Continues)
		case "refiled_from":
			return once(seen, 20) && d.str(&t.RefiledFrom)
		case "filed_by":
			return once(seen, 21) && d.str(&t.FiledBy)
		case "last_run":
			return once(seen, 22) && d.str(&t.LastRun)
		case "finished_at":
			return once(seen, 23) && d.timePtr(&t.FinishedAt)
		}
		return false
	})
}

func (d *fdec) template(t *Template) bool {
	return d.object(func(k []byte, seen *uint32) bool {
		switch string(k) {
		case "id":
			return once(seen, 0) && d.str(&t.ID)
		case "system":
			return once(seen, 1) && d.boolean(&t.System)
		case "cron":
			return once(seen, 2) && d.str(&t.Cron)
		case "text":
			return once(seen, 3) && d.str(&t.Text)
		case "standing":
			return once(seen, 4) && d.str(&t.Standing)
		case "by":
			return once(seen, 5) && d.str(&t.By)
		case "window":
			return once(seen, 6) && d.str(&t.Window)
		case "catch_up":
			return once(seen, 7) && d.str(&t.CatchUp)
		case "overlap":
			return once(seen, 8) && d.str(&t.Overlap)
		case "ceiling":
			return once(seen, 9) && d.str(&t.Ceiling)
		case "priority":
			return once(seen, 10) && d.int(&t.Priority)
		case "retries":
			return once(seen, 13) && d.int(&t.Retries)
		case "channel":
			return once(seen, 11) && d.str(&t.Channel)
		case "cursor":
			return once(seen, 12) && d.timePtr(&t.Cursor)
		case "disabled":
			return once(seen, 14) && d.boolean(&t.Disabled)
		case "last":
			return once(seen, 15) && d.templateLast(&t.Last)
		}
		return false
	})
}

func (d *fdec) templateLast(p **TemplateLast) bool {
	l := new(TemplateLast)
	*p = l
	return d.object(func(k []byte, seen *uint32) bool {
		switch string(k) {
		case "task":
			return once(seen, 0) && d.str(&l.Task)
		case "at":
			return once(seen, 1) && d.time(&l.At)
		case "state":
			return once(seen, 2) && d.str(&l.State)
		case "run":
			return once(seen, 3) && d.str(&l.Run)
		}
		return false
	})
}

// decodeFast reads a tasks.json the way json.Unmarshal into File would, or
// says ok=false. hasFormat tells whether the "format" key was there.
func decodeFast(data []byte) (f *File, hasFormat, ok bool) {
	return (&fdec{b: data}).file()
}

func (d *fdec) file() (f *File, hasFormat, ok bool) {
	data := d.b
	f = new(File)
	ok = d.object(func(k []byte, seen *uint32) bool {
		switch string(k) {
		case "format":
			hasFormat = true
			return once(seen, 0) && d.int(&f.Format)
		case "version":
			if !once(seen, 1) {
				return false
			}
			v, ok := d.integer(64)
			f.Version = v
			return ok
		case "tasks":
			if !once(seen, 2) {
				return false
			}
			if d.raw != nil {
				return d.rawTasks()
			}
			f.Tasks = make([]Task, 0, bytes.Count(data, []byte{'\n'})) // the writer puts one entry a line
			return d.array(func() bool {
				f.Tasks = append(f.Tasks, Task{})
				return d.task(&f.Tasks[len(f.Tasks)-1])
			})
		case "worker": // schedule.json's; File has no such field
			var w string
			return once(seen, 4) && d.str(&w)
		case "now":
			var t time.Time
			return once(seen, 5) && d.time(&t)
		case "templates":
			if !once(seen, 3) {
				return false
			}
			f.Templates = []Template{}
			return d.array(func() bool {
				f.Templates = append(f.Templates, Template{})
				return d.template(&f.Templates[len(f.Templates)-1])
			})
		}
		return false
	})
	if !ok {
		return nil, false, false
	}
	d.ws()
	if d.i != len(d.b) {
		return nil, false, false
	}
	return f, hasFormat, true
}
