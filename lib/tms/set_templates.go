package tms

import (
	"fmt"
	"time"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/home"
)

// raisesCeiling says why a worker's ceiling for a task of kind is refused
// ("" when it is not): a worker may lower its kind's ceiling, never raise
// it (Containment). The owner's sets are not bound by it.
func (s *setPlan) raisesCeiling(kind, ceiling string) string {
	if s.by != ByWorker || ceiling == "" {
		return ""
	}
	d, err := home.ParseDuration(ceiling)
	limit := s.t.p.Org.Ceiling(kind)
	if err != nil || limit <= 0 || d <= limit {
		return ""
	}
	return fmt.Sprintf("ceiling %s is more than the %s ceiling of %s: a worker may lower a ceiling, never raise it", ceiling, kind, config.FormatDuration(limit))
}

func templateEqual(a, b *Template) bool {
	return a.Cron == b.Cron && a.Text == b.Text && (b.Standing == "" || a.Standing == b.Standing) &&
		a.Window == b.Window && (b.CatchUp == "" || a.CatchUp == b.CatchUp) && (b.Overlap == "" || a.Overlap == b.Overlap) &&
		a.Ceiling == b.Ceiling && a.Priority == b.Priority && a.Retries == b.Retries && a.Channel == b.Channel && a.System == b.System
}

// planTemplates checks every listed template (the heartbeat only as it
// is, a new one created, an old one edited) and retires the ones left
// out, except system templates.
func (s *setPlan) planTemplates(entries []Template) {
	tseen := map[string]bool{}
	for k := range entries {
		e := entries[k]
		if tseen[e.ID] {
			s.refuse("template "+e.ID, "listed twice")
			continue
		}
		tseen[e.ID] = true
		old := s.cur.Template(e.ID)
		switch {
		case e.ID == HeartbeatID || (old != nil && old.System):
			if old == nil || !templateEqual(old, &e) || (e.Cursor != nil && !timesEqual(e.Cursor, old.Cursor)) {
				s.refuse("template "+e.ID, "the heartbeat system template cannot be touched")
				continue
			}
			s.tpls = append(s.tpls, *old)
		case e.System:
			s.refuse("template "+e.ID, "system templates cannot be created")
		case old == nil:
			s.createTemplate(&e)
		default:
			s.editTemplate(old, &e)
		}
	}
	for _, old := range s.cur.Templates {
		if tseen[old.ID] {
			continue
		}
		if old.System {
			s.tpls = append(s.tpls, old)
			continue
		}
		s.changes = append(s.changes, Change{old.ID, "retired"})
		s.recs = append(s.recs, templateRec(old, true))
	}
}

// createTemplate adds e as a new template by s.by, its cursor now.
func (s *setPlan) createTemplate(e *Template) {
	if e.Standing == Owner {
		s.refuse("template "+e.ID, "creating owner entries is not allowed")
		return
	}
	nt := *e
	nt.By = s.by
	if _, err := normalizeTemplate(&nt); err != nil {
		s.refuse("template "+e.ID, "%v", err)
		return
	}
	if why := s.raisesCeiling(KindRecurring, nt.Ceiling); why != "" {
		s.refuse("template "+e.ID, "%s", why)
		return
	}
	c := s.t.now.Truncate(time.Second)
	nt.Cursor = &c
	nt.Last = nil
	s.tpls = append(s.tpls, nt)
	s.changes = append(s.changes, Change{e.ID, "created"})
	s.recs = append(s.recs, templateRec(nt, false))
}

// editTemplate applies e to the template old: its by and cursor never
// change, nor, from the worker, an owner-standing template.
func (s *setPlan) editTemplate(old, e *Template) {
	by := s.by
	if e.Standing == Owner && old.Standing != Owner {
		s.refuse("template "+e.ID, "raising standing to owner is not allowed")
		return
	}
	if e.By != "" && e.By != old.By {
		s.refuse("template "+e.ID, "field by cannot be changed")
		return
	}
	if e.Cursor != nil && !timesEqual(e.Cursor, old.Cursor) {
		s.refuse("template "+e.ID, "field cursor cannot be changed")
		return
	}
	nt := *e
	nt.By = old.By
	nt.Cursor = old.Cursor
	nt.Disabled, nt.Last = old.Disabled, old.Last // the operator's and the host's
	if _, err := normalizeTemplate(&nt); err != nil {
		s.refuse("template "+e.ID, "%v", err)
		return
	}
	if why := s.raisesCeiling(KindRecurring, nt.Ceiling); why != "" && nt.Ceiling != old.Ceiling {
		s.refuse("template "+e.ID, "%s", why)
		return
	}
	if nt.Text != old.Text && old.By != by {
		s.refuse("template "+e.ID, "editing the text of an entry it did not file (by %s) is not allowed", old.By)
		return
	}
	if old.Standing == Owner && by != ByOwner && (!templateEqual(old, &nt) || nt.Standing != old.Standing) {
		// Changing an owner-standing template (its cron, overlap, ...)
		// would mint owner work the budget never holds: the same as
		// creating an owner entry. Retiring it (omission) stays allowed.
		s.refuse("template "+e.ID, "an owner-standing template cannot be changed by the worker (it may retire it)")
		return
	}
	if !templateEqual(old, &nt) || nt.Standing != old.Standing {
		s.changes = append(s.changes, Change{e.ID, "changed"})
		s.recs = append(s.recs, templateRec(nt, false))
	}
	s.tpls = append(s.tpls, nt)
}
