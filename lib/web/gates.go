package web

import (
	"bytes"
	"context"
	"net/http"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/review"
	"github.com/roster-sh/roster/lib/tms"
)

// maxDiff bounds the diff a gate's page shows (git's output beyond it is
// cut, and says so).
const maxDiff = 4 << 20

// gateRow is one gate of a live task.
type gateRow struct {
	Worker string
	Task   tms.Task
	Gate   tms.Gate
}

// Push tells a held push (repo_push) from a worker's proposal.
func (g gateRow) Push() bool { return g.Gate.Kind == tms.GateRepoPush && g.Gate.Push != nil }

type gatesData struct {
	Pending  []gateRow
	Resolved []gateRow
	Problems []string // workers whose partition could not be read
}

func (s *Server) gatesPage(w http.ResponseWriter, r *http.Request) {
	d, err := s.gates(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, "gates", s.page(r, "gates", d))
}

// gates lists every gate on every worker's live tasks, pending first.
func (s *Server) gates(ctx context.Context) (*gatesData, error) {
	names, err := config.ListWorkers(s.cfg.Home)
	if err != nil {
		return nil, err
	}
	d := &gatesData{}
	for _, n := range names {
		p, err := tms.Open(s.cfg.Home, n, tms.Options{})
		var f *tms.File
		if err == nil {
			f, err = p.ReadNoLock(ctx)
		}
		if err != nil {
			d.Problems = append(d.Problems, "worker "+n+": "+err.Error())
			continue
		}
		for _, t := range f.Tasks {
			for _, g := range t.Gates {
				row := gateRow{Worker: n, Task: t, Gate: g}
				if g.State == tms.GatePending {
					d.Pending = append(d.Pending, row)
				} else {
					d.Resolved = append(d.Resolved, row)
				}
			}
		}
	}
	return d, nil
}

// gateData is one gate's page: what it asks, and a held push's commits,
// diffstat and diff.
type gateData struct {
	gateRow
	Diff    string
	DiffErr string
}

func (s *Server) gatePage(w http.ResponseWriter, r *http.Request) {
	p, task, err := s.gateTask(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	g, err := p.FindGate(r.Context(), task.ID, r.PathValue("gate"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d := gateData{gateRow: gateRow{Worker: p.Name, Task: task, Gate: *g}}
	if d.Push() {
		var b bytes.Buffer
		lw := &limitWriter{w: &b, n: maxDiff}
		if err := review.ShowPush(r.Context(), s.cfg.Home, p.Name, g, true, lw); err != nil && !lw.full {
			d.DiffErr = err.Error()
		}
		d.Diff = b.String()
		if lw.full {
			d.DiffErr = "the diff is cut at 4 MiB: roster-task gate show --patch prints it whole"
		}
	}
	s.render(w, "gate", s.page(r, "gate "+g.ID, d))
}

// gateTask finds the live task a gate path names, in its worker.
func (s *Server) gateTask(r *http.Request) (*tms.Partition, tms.Task, error) {
	worker := r.PathValue("worker")
	if err := home.ValidWorker(worker); err != nil {
		return nil, tms.Task{}, err
	}
	p, err := tms.Open(s.cfg.Home, worker, tms.Options{})
	if err != nil {
		return nil, tms.Task{}, err
	}
	t, err := p.Get(r.Context(), r.PathValue("task"))
	return p, t, err
}

// decide is `roster-task gate resolve`: review.Resolve, the command
// line's own call, journaled by operator (web).
func (s *Server) decide(w http.ResponseWriter, r *http.Request) {
	decision := r.PostFormValue("decision")
	if decision != "approve" && decision != "deny" {
		s.fail(w, r, errs.New(errs.ErrUsage, "decision "+decision+": approve or deny"))
		return
	}
	p, task, err := s.gateTask(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	gate := r.PathValue("gate")
	cont, stale, err := review.Resolve(r.Context(), p, task.ID, gate, decision, r.PostFormValue("why"), By)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	msg := "gate " + gate + " of task " + task.ID + ": " + decision + "d"
	if stale != nil {
		msg = "gate " + gate + " of task " + task.ID + " recorded denied: " + stale.Error()
	}
	if cont != "" {
		msg += "; continuation " + cont + " filed"
	}
	done(w, r, "/gates", msg) // a task whose last gate resolved is not live any more
}

// limitWriter keeps the first n bytes and drops the rest, noting that
// it did.
type limitWriter struct {
	w    *bytes.Buffer
	n    int
	full bool
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if room := l.n - l.w.Len(); len(p) > room {
		l.w.Write(p[:max(room, 0)])
		l.full = true
		return len(p), nil
	}
	return l.w.Write(p)
}
