package gateway

import (
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/creds"
	"github.com/roster-sh/roster/lib/repos"
	"github.com/roster-sh/roster/lib/runs"
)

// MaxFetchBody bounds a fetch's request (its wants and haves), after
// decompression: a negotiation of a very large history is a few MiB.
const MaxFetchBody = 64 << 20

// serveGit answers /git/NAME/info/refs?service=..., /git/NAME/git-upload-pack
// and /git/NAME/git-receive-pack (docs/repos.md) from the host's own copy
// of the repo through lib/repos; anything else under /git/ is bad_request,
// a NAME with no grant repo_not_granted. Refusals are text the git client
// prints ("remote: roster: KIND: ...").
func (g *Gateway) serveGit(w http.ResponseWriter, r *http.Request, start time.Time) {
	rest := strings.TrimPrefix(r.URL.Path, "/git/")
	name, op, _ := strings.Cut(rest, "/")
	entry := runs.LedgerEntry{Kind: "git", Method: clip(r.Method, 20), Repo: clip(name, 64)}
	svc := ""
	switch {
	case op == "info/refs" && r.Method == http.MethodGet:
		svc = r.URL.Query().Get("service")
	case (op == repos.UploadPack || op == repos.ReceivePack) && r.Method == http.MethodPost:
		svc = op
	}
	if svc != repos.UploadPack && svc != repos.ReceivePack {
		g.refuseGit(w, r, start, entry, runs.RefuseBadRequest, "not a git smart-HTTP request (info/refs?service=git-upload-pack|git-receive-pack, or a POST to one)")
		return
	}
	entry.Service = strings.TrimPrefix(svc, "git-")
	if g.cfg.Git == nil {
		g.refuseGit(w, r, start, entry, repos.RefuseRepoNotGranted, "this worker has no [[repo]] grant")
		return
	}
	if _, err := g.cfg.Git.Grant(name); err != nil {
		g.refuseGit(w, r, start, entry, repos.RefuseRepoNotGranted, err.Error())
		return
	}
	body := io.Reader(r.Body)
	if op != "info/refs" {
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				g.refuseGit(w, r, start, entry, runs.RefuseBadRequest, "a gzip body that is not gzip")
				return
			}
			defer zr.Close()
			body = zr
		} else if ce := r.Header.Get("Content-Encoding"); ce != "" && ce != "identity" {
			g.refuseGit(w, r, start, entry, runs.RefuseBadRequest, "Content-Encoding "+clip(ce, 40)+" is not served (gzip or none)")
			return
		}
	}
	cb := &countingReader{r: body}
	cw := &countingWriter{w: w}
	h := w.Header()
	h.Set("Cache-Control", "no-cache, max-age=0, must-revalidate")
	var err error
	var res *repos.PushResult
	switch {
	case op == "info/refs":
		h.Set("Content-Type", "application/x-"+svc+"-advertisement")
		err = g.cfg.Git.Advertise(r.Context(), name, svc, r.Header.Get("Git-Protocol"), &flushing{w: cw})
	case svc == repos.UploadPack:
		h.Set("Content-Type", "application/x-git-upload-pack-result")
		err = g.cfg.Git.UploadPack(r.Context(), name, r.Header.Get("Git-Protocol"), io.LimitReader(cb, MaxFetchBody), &flushing{w: cw})
	default:
		h.Set("Content-Type", "application/x-git-receive-pack-result")
		res, err = g.cfg.Git.ReceivePack(r.Context(), name, cb, &flushing{w: cw})
	}
	entry.BytesUp, entry.BytesDn = cb.n, cw.n
	if err != nil && cw.n == 0 {
		kind := runs.RefuseBadRequest
		switch {
		case errors.Is(err, repos.ErrUpstream):
			kind = repos.RefuseUpstream
		case errors.Is(err, creds.ErrNoCredential):
			kind = runs.RefuseNoCredential
		case errors.Is(err, repos.ErrPkt):
		default:
			kind = "git_failed"
		}
		g.refuseGit(w, r, start, entry, kind, err.Error())
		return
	}
	entry.Decision, entry.Status = "allowed", http.StatusOK
	if res != nil {
		entry.Refs = res.Refs
		g.mu.Lock()
		for _, ref := range res.Refs {
			ref.Repo = name
			g.pushes = append(g.pushes, ref)
		}
		g.mu.Unlock()
		if res.Refusal != "" {
			entry.Decision, entry.Refusal = "refused", res.Refusal
		}
	}
	entry.At, entry.MS = start.UTC(), g.cfg.Now().Sub(start).Milliseconds()
	g.record(entry, "/git/"+clip(name, 64))
}

// refuseGit answers a git request it will not serve: 403 (text the git
// client prints) with X-Roster-Refusal, and a ledger line.
func (g *Gateway) refuseGit(w http.ResponseWriter, r *http.Request, start time.Time, e runs.LedgerEntry, kind, msg string) {
	text := "roster: " + kind + ": " + msg + "\n"
	h := w.Header()
	h.Set("X-Roster-Refusal", kind)
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	status := http.StatusForbidden
	if kind == repos.RefuseUpstream || kind == "git_failed" {
		status = http.StatusBadGateway
	}
	w.WriteHeader(status)
	io.WriteString(w, text)
	e.At, e.Decision, e.Refusal, e.Status = start.UTC(), "refused", kind, status
	e.BytesDn = int64(len(text))
	e.MS = g.cfg.Now().Sub(start).Milliseconds()
	g.record(e, "/git/"+e.Repo)
}

// flushing flushes each write to the box as git makes it (the status, 200,
// goes with the first byte: until then a failure is still answered as a
// refusal).
type flushing struct{ w *countingWriter }

func (l *flushing) Write(p []byte) (int, error) {
	n, err := l.w.Write(p)
	if f, ok := l.w.w.(http.Flusher); ok {
		f.Flush()
	}
	return n, err
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

type countingWriter struct {
	w http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
