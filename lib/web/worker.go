package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"time"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
	"github.com/roster-sh/roster/lib/snap"
	"github.com/roster-sh/roster/lib/suite"
	"github.com/roster-sh/roster/lib/tms"
)

// recentRuns is how many runs a worker's page lists.
const recentRuns = 30

// templateRow is a template with its next activations in the host zone.
type templateRow struct {
	tms.Template
	Zone string
	Next []string
	Err  string // its spec does not parse
}

// workerPage is what a worker's page shows.
type workerData struct {
	Name      string
	Paused    bool
	Holds     []string
	Budget    tms.Budget
	Tasks     []tms.Entry // live tasks, pending in claim order, then claimed, then needs-review
	Templates []templateRow
	Runs      []runRow
	Snaps     []snap.Info
	SnapErr   string
	Live      []string
}

// runRow is a run as the lists show it.
type runRow struct {
	runs.Entry
	Started string
	State   string
	Err     string
}

// Attested is the run's attestation, "" while none.
func (r runRow) Attested() string {
	if r.Record == nil {
		return ""
	}
	return r.Record.Attested
}

func (s *Server) workerPage(w http.ResponseWriter, r *http.Request) {
	d, err := s.workerData(r.Context(), r.PathValue("worker"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p := s.page(r, "worker "+d.Name, d)
	s.render(w, "worker", p)
}

func (s *Server) workerData(ctx context.Context, name string) (*workerData, error) {
	h := s.cfg.Home
	spec, err := config.LoadWorker(h, name)
	if err != nil {
		return nil, err
	}
	p, err := tms.Open(h, name, tms.Options{Worker: spec})
	if err != nil {
		return nil, err
	}
	due, err := p.Due(ctx)
	if err != nil {
		return nil, err
	}
	f, err := p.ReadNoLock(ctx)
	if err != nil {
		return nil, err
	}
	now, zone := s.cfg.Now(), p.Zone()
	d := &workerData{Name: name, Paused: spec.Paused, Holds: due.Holds, Budget: due.Budget, Tasks: due.Entries}
	for _, t := range f.Templates {
		d.Templates = append(d.Templates, nextFirings(t, now, zone))
	}
	list, err := runs.List(h, runs.Filter{Workers: []string{name}, Limit: recentRuns})
	if err != nil {
		return nil, err
	}
	for _, e := range list {
		d.Runs = append(d.Runs, listRow(e, zone))
	}
	var claims []string
	for _, e := range due.Entries {
		if e.Claim != nil {
			claims = append(claims, e.Claim.Run)
		}
	}
	for _, e := range list {
		if e.Record == nil || e.Record.Ended == "" {
			claims = append(claims, e.ID) // not ended: an ad-hoc box may be live
		}
	}
	d.Live = liveOf(h.Worker(name), claims)
	d.Snaps, err = snap.List(ctx, h.Worker(name), snap.Options{Keep: p.Org.Storage.Snapshots, Daily: p.Org.Storage.Daily,
		Zone: zone, UndoDays: p.Org.Storage.UndoDays})
	if err != nil {
		d.SnapErr = err.Error()
	}
	return d, nil
}

// nextFirings is a template's next three activations under roster's
// time rules (tms.PreviewTemplate, as `roster-task template ls` uses).
func nextFirings(t tms.Template, now time.Time, zone *time.Location) templateRow {
	row := templateRow{Template: t, Zone: zone.String()}
	after := now
	if t.Cursor != nil && t.Cursor.After(now) {
		after = *t.Cursor
	}
	acts, sc, err := tms.PreviewTemplate(t.Cron, after, 3, zone)
	if err != nil {
		row.Err = err.Error()
		return row
	}
	row.Zone = sc.Location().String()
	if t.Disabled {
		return row
	}
	for _, a := range acts {
		s := a.Local.Format("2006-01-02 15:04 MST")
		if a.Mark != "" {
			s += " (" + a.Mark + ")"
		}
		row.Next = append(row.Next, s)
	}
	return row
}

func listRow(e runs.Entry, zone *time.Location) runRow {
	row := runRow{Entry: e, Started: when(e.Started(), zone), State: runState(e)}
	if e.Err != nil {
		row.Err = e.Err.Error()
	}
	return row
}

// runState is how a run stands: its `ended`, or live / starting / lost
// (as `roster-runs ls` says it).
func runState(e runs.Entry) string {
	if e.Record != nil && e.Record.Ended != "" {
		return e.Record.Ended
	}
	if e.Err != nil {
		return "unreadable"
	}
	if e.Live() {
		return "live"
	}
	if _, err := runs.ReadBoxInfo(e.Dir); err != nil && !runs.Finished(e.Dir) {
		return "starting"
	}
	return "lost"
}

func (s *Server) pause(w http.ResponseWriter, r *http.Request)  { s.setPaused(w, r, true) }
func (s *Server) resume(w http.ResponseWriter, r *http.Request) { s.setPaused(w, r, false) }

// setPaused is `roster worker pause/resume`: config.SetPaused, the
// spec's one line changed in place.
func (s *Server) setPaused(w http.ResponseWriter, r *http.Request, paused bool) {
	name := r.PathValue("worker")
	if err := home.ValidWorker(name); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := config.SetPaused(s.cfg.Home, name, paused); err != nil {
		s.fail(w, r, err)
		return
	}
	what := "resumed"
	if paused {
		what = "paused"
	}
	s.cfg.Log.Info("worker "+what, "worker", name, "by", By)
	done(w, r, "/w/"+url.PathEscape(name), "worker "+name+" "+what)
}

// requeue is `roster-task requeue`: the same library call, reaping a dead
// supervisor's container with roster-box first, journaled by operator
// (web).
func (s *Server) requeue(w http.ResponseWriter, r *http.Request) {
	name, id := r.PathValue("worker"), r.PostFormValue("task")
	if err := home.ValidWorker(name); err != nil {
		s.fail(w, r, err)
		return
	}
	found, _, err := tms.FindTask(r.Context(), s.cfg.Home, name, id, true)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p, err := tms.Open(s.cfg.Home, name, tms.Options{})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	task, changed, err := p.RequeueReaping(r.Context(), found.ID, By, func(run string) error {
		box, err := suite.Find("roster-box")
		if err != nil {
			return fmt.Errorf("roster-box not found: %v", err)
		}
		out, err := exec.CommandContext(r.Context(), box, "--home", s.cfg.Home.Dir, "reap", run).CombinedOutput()
		if err != nil {
			return fmt.Errorf("roster-box reap %s: %v: %s", run, err, out)
		}
		return nil
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	msg := "task " + task.ID + " requeued"
	if !changed {
		msg = "task " + task.ID + " is already pending; nothing changed"
	}
	done(w, r, "/w/"+url.PathEscape(name), msg)
}

// done answers a write with a redirect to the page it was made from,
// saying what was done (a GET after the POST: reloading repeats
// nothing).
func done(w http.ResponseWriter, r *http.Request, to, msg string) {
	http.Redirect(w, r, to+"?done="+url.QueryEscape(msg), http.StatusSeeOther)
}
