package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
)

// By is the journal's `by` for the console's writes.
const By = "operator (web)"

// cookieName carries the token after a login.
const cookieName = "roster_web"

// Config is what a Server serves and how it is reached.
type Config struct {
	Home  home.Home
	Token string // the web token (LoadToken)
	// Hosts are the Host header values accepted, host[:port] as a browser
	// sends them: the listen address, and for a loopback one "localhost"
	// too. A request naming any other host is refused (DNS rebinding).
	Hosts []string
	TLS   bool             // served over TLS: the cookie is Secure
	Now   func() time.Time // nil: time.Now
	// Poll is how often a live run's page looks for more transcript
	// (0: 500 ms).
	Poll time.Duration
	// Log gets a line for every write the console makes (nil:
	// slog.Default()): pause and resume, which no journal records (the
	// spec's event list has no place for them), are told there.
	Log *slog.Logger
}

// Server is the console: an http.Handler over one home.
type Server struct {
	cfg   Config
	csrf  string
	tpl   *template.Template
	mux   *http.ServeMux
	mu    sync.Mutex
	codes map[string]bool // one-time login codes not used yet
}

// New makes the console for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 500 * time.Millisecond
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	tpl, err := parseTemplates()
	if err != nil {
		return nil, err
	}
	m := hmac.New(sha256.New, []byte(cfg.Token))
	m.Write([]byte("roster-web csrf"))
	s := &Server{cfg: cfg, csrf: hex.EncodeToString(m.Sum(nil)), tpl: tpl, codes: map[string]bool{}}
	s.routes()
	// A long-lived reader of the same runs folders: each worker's listing
	// is read again only when the folder changed (a stat per worker and
	// page instead of a listing of every run: the overview's budget).
	runs.CacheIDs(true)
	return s, nil
}

// LoginCode makes a one-time login code: /login?code=CODE sets the
// cookie once, and the code is spent.
func (s *Server) LoginCode() string {
	b := make([]byte, 16)
	rand.Read(b)
	c := hex.EncodeToString(b)
	s.mu.Lock()
	s.codes[c] = true
	s.mu.Unlock()
	return c
}

func (s *Server) spend(code string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.codes[code] {
		return false
	}
	delete(s.codes, code)
	return true
}

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", s.overview)
	m.HandleFunc("GET /w/{worker}", s.workerPage)
	m.HandleFunc("POST /w/{worker}/pause", s.pause)
	m.HandleFunc("POST /w/{worker}/resume", s.resume)
	m.HandleFunc("POST /w/{worker}/requeue", s.requeue)
	m.HandleFunc("GET /r/{run}", s.runPage)
	m.HandleFunc("GET /r/{run}/events", s.runEvents)
	m.HandleFunc("GET /usage", s.usagePage)
	m.HandleFunc("GET /gates", s.gatesPage)
	m.HandleFunc("GET /gates/{worker}/{task}/{gate}", s.gatePage)
	m.HandleFunc("POST /gates/{worker}/{task}/{gate}", s.decide)
	m.HandleFunc("GET /chat", s.chatList)
	m.HandleFunc("GET /chat/{worker}", s.chatPage)
	static, _ := fs.Sub(assets, "static")
	m.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux = m
}

// csp allows this origin's script, style and images (data: for none),
// nothing inline, no framing, forms to this origin only.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// ServeHTTP checks the Host, the token and, for a write, the CSRF token,
// before any page is looked at.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", csp)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "same-origin") // no-referrer would make a form's Origin "null"
	hd.Set("Cache-Control", "no-store")
	if !s.hostAllowed(r.Host) {
		http.Error(w, "roster-web: host "+r.Host+" is not one this console serves (DNS rebinding is refused)", http.StatusMisdirectedRequest)
		return
	}
	if r.URL.Path == "/login" {
		s.login(w, r)
		return
	}
	if !s.authed(r) {
		s.needLogin(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if !s.sameOrigin(r) || subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(s.csrf)) != 1 {
			http.Error(w, "roster-web: this write has no valid CSRF token (reload the page and try again)", http.StatusForbidden)
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

func (s *Server) hostAllowed(host string) bool {
	for _, h := range s.cfg.Hosts {
		if strings.EqualFold(h, host) {
			return true
		}
	}
	return false
}

// sameOrigin refuses a write whose Origin (when the browser sends one)
// is another site's.
func (s *Server) sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	scheme := "http://"
	if s.cfg.TLS {
		scheme = "https://"
	}
	return strings.HasPrefix(o, scheme) && s.hostAllowed(strings.TrimPrefix(o, scheme))
}

func (s *Server) authed(r *http.Request) bool {
	c, err := r.Cookie(cookieName)
	return err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(s.cfg.Token)) == 1
}

// login takes a one-time code (GET /login?code=) or the token itself
// (POST /login, pasted from $ROSTER_HOME/web-token) and sets the cookie.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	ok := false
	switch r.Method {
	case http.MethodGet:
		if c := r.URL.Query().Get("code"); c != "" {
			ok = s.spend(c)
		}
	case http.MethodPost:
		ok = subtle.ConstantTimeCompare([]byte(strings.TrimSpace(r.PostFormValue("token"))), []byte(s.cfg.Token)) == 1
	}
	if !ok {
		w.WriteHeader(http.StatusUnauthorized)
		s.render(w, "login", map[string]any{"Tried": r.Method == http.MethodPost || r.URL.Query().Has("code")})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: s.cfg.Token, Path: "/", HttpOnly: true,
		Secure: s.cfg.TLS, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/", http.StatusSeeOther) // the code leaves the address bar
}

func (s *Server) needLogin(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "roster-web: not logged in", http.StatusUnauthorized)
		return
	}
	w.WriteHeader(http.StatusUnauthorized)
	s.render(w, "login", map[string]any{})
}

// LoopbackHosts are the Host values a browser sends for a console
// listening on addr (host:port): that address, and for a loopback one
// localhost and both loopback literals too.
func LoopbackHosts(addr string) []string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return []string{addr}
	}
	out := []string{net.JoinHostPort(host, port)}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() || host == "localhost" {
		for _, h := range []string{"localhost:" + port, "127.0.0.1:" + port, "[::1]:" + port} {
			if h != out[0] {
				out = append(out, h)
			}
		}
	}
	return out
}
