package web

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
)

//go:embed templates/*.html static/*
var assets embed.FS

// funcs are the templates' helpers; each returns plain strings, which
// html/template escapes where they land.
var funcs = template.FuncMap{
	"usd":     usd,
	"dur":     dur,
	"secs":    func(s float64) string { return dur(time.Duration(s * float64(time.Second))) },
	"short":   func(s string, n int) string { return short(s, n) },
	"commit":  func(s string) string { return short(s, 7) },
	"pct":     pct,
	"compact": compact,
	"at":      at,
	"dict":    dict,
}

// dict makes a map of its key, value arguments, for a template that
// needs more than one value.
func dict(kv ...any) map[string]any {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		k, _ := kv[i].(string)
		m[k] = kv[i+1]
	}
	return m
}

// at is a time (or a *time.Time) in zone, "-" for none.
func at(t any, zone *time.Location) string {
	switch v := t.(type) {
	case time.Time:
		return when(v, zone)
	case *time.Time:
		if v != nil {
			return when(*v, zone)
		}
	}
	return "-"
}

func parseTemplates() (*template.Template, error) {
	return template.New("").Funcs(funcs).ParseFS(assets, "templates/*.html")
}

// render executes template name into a buffer first, so that a failure
// is a clean error page, not half a page.
func (s *Server) render(w http.ResponseWriter, name string, data any) {
	var b bytes.Buffer
	if err := s.tpl.ExecuteTemplate(&b, name, data); err != nil {
		http.Error(w, "roster-web: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b.Bytes())
}

// page is what every page's layout reads: its title, the CSRF token
// for its forms, a note after a write, and the page's own data.
type page struct {
	Title string
	CSRF  string
	Note  string
	Loc   *time.Location // the host zone: org.toml's [dispatch] zone, else the system's
	Data  any
}

func (s *Server) page(r *http.Request, title string, data any) page {
	p := page{Title: title, CSRF: s.csrf, Note: r.URL.Query().Get("done"), Data: data, Loc: time.Local}
	if org, err := config.LoadOrg(s.cfg.Home); err == nil {
		p.Loc = org.Zone()
	}
	return p
}

// fail shows err as an error page with the status its kind means: what
// cannot be read is refused and shown, never repaired.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, errs.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		code = http.StatusNotFound
	case errors.Is(err, errs.ErrUsage):
		code = http.StatusBadRequest
	case errors.Is(err, errs.ErrConflict):
		code = http.StatusConflict
	case errors.Is(err, errs.ErrRefused):
		code = http.StatusUnprocessableEntity
	}
	w.WriteHeader(code)
	p := s.page(r, "error", map[string]string{"Error": err.Error(), "Hint": errs.HintOf(err)})
	s.render(w, "error", p)
}

func usd(v float64) string {
	if v >= 1 || v == 0 {
		return fmt.Sprintf("$%.2f", v)
	}
	return fmt.Sprintf("$%.4f", v)
}

func dur(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

func compact(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 1000000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprintf("%.1fM", float64(n)/1e6)
}

// pct is part of whole in percent, 0 to 100 (for bar widths).
func pct(part, whole float64) int {
	if whole <= 0 || part <= 0 {
		return 0
	}
	if part >= whole {
		return 100
	}
	return int(part / whole * 100)
}

func short(s string, n int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

func when(t time.Time, zone *time.Location) string {
	if t.IsZero() {
		return "-"
	}
	return t.In(zone).Format("2006-01-02 15:04:05 MST")
}

// notExist tells a missing file from one that cannot be read.
func notExist(err error) bool { return errors.Is(err, os.ErrNotExist) }
