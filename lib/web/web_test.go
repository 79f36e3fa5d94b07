package web

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/tms"
	"github.com/roster-sh/roster/lib/web/webtest"
)

const testToken = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

const testHost = "console.test"

var nextUID atomic.Int32

type env struct {
	t *testing.T
	s *Server
	b *webtest.Built
}

func newEnv(t *testing.T) *env {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("worker add gives folders to box uids: run as root")
	}
	b, err := webtest.Build(context.Background(), t.TempDir(), 293000+int(nextUID.Add(2)))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Home: b.Home, Token: testToken, Hosts: []string{testHost}})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, s: s, b: b}
}

// do sends a request as a logged-in browser on the console's host,
// unless the options say otherwise.
func (e *env) do(method, path string, form url.Values, opts ...func(*http.Request)) *httptest.ResponseRecorder {
	e.t.Helper()
	var r *http.Request
	if form != nil {
		r = httptest.NewRequest(method, path, strings.NewReader(form.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		r = httptest.NewRequest(method, path, nil)
	}
	r.Host = testHost
	r.AddCookie(&http.Cookie{Name: cookieName, Value: testToken})
	for _, o := range opts {
		o(r)
	}
	w := httptest.NewRecorder()
	e.s.ServeHTTP(w, r)
	return w
}

// newRequest is a logged-in browser's request on the console's host.
func newRequest(method, path string) *http.Request {
	r := httptest.NewRequest(method, path, nil)
	r.Host = testHost
	r.AddCookie(&http.Cookie{Name: cookieName, Value: testToken})
	return r
}

func noCookie(r *http.Request) { r.Header.Del("Cookie") }

func (e *env) get(path string) string {
	e.t.Helper()
	w := e.do("GET", path, nil)
	if w.Code != http.StatusOK {
		e.t.Fatalf("GET %s: %d\n%s", path, w.Code, w.Body)
	}
	return w.Body.String()
}

// assertEscaped fails if a hostile string reached the page as markup.
func assertEscaped(t *testing.T, page, what string) {
	t.Helper()
	for _, bad := range []string{"<script>alert", "<img src=x", "<b>bold?</b>"} {
		if strings.Contains(page, bad) {
			t.Errorf("%s: %q reached the page unescaped", what, bad)
		}
	}
}

func TestRequestWithoutTokenIsRefused(t *testing.T) {
	e := newEnv(t)
	for _, path := range []string{"/", "/w/dobby", "/r/" + e.b.Run, "/gates", "/usage", "/chat", "/static/style.css"} {
		w := e.do("GET", path, nil, noCookie)
		if w.Code != http.StatusUnauthorized || strings.Contains(w.Body.String(), "dobby") {
			t.Errorf("GET %s without the token: %d; want 401 and nothing of the tree\n%s", path, w.Code, w.Body)
		}
	}
	w := e.do("GET", "/", nil, func(r *http.Request) {
		r.Header.Del("Cookie")
		r.AddCookie(&http.Cookie{Name: cookieName, Value: strings.Repeat("f", 64)})
	})
	if w.Code != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d; want 401", w.Code)
	}
}

func TestForeignHostHeaderIsRefused(t *testing.T) {
	e := newEnv(t)
	w := e.do("GET", "/", nil, func(r *http.Request) { r.Host = "attacker.example:8790" })
	if w.Code != http.StatusMisdirectedRequest || strings.Contains(w.Body.String(), "dobby") {
		t.Fatalf("a foreign Host: %d; want 421\n%s", w.Code, w.Body)
	}
}

func TestPostWithoutCSRFTokenIsRefused(t *testing.T) {
	e := newEnv(t)
	for _, form := range []url.Values{{}, {"csrf": {"nope"}}} {
		w := e.do("POST", "/w/kreacher/resume", form)
		if w.Code != http.StatusForbidden {
			t.Errorf("POST with csrf %q: %d; want 403", form.Get("csrf"), w.Code)
		}
	}
	w := e.do("POST", "/w/kreacher/resume", url.Values{"csrf": {e.s.csrf}}, func(r *http.Request) { r.Header.Set("Origin", "http://attacker.example") })
	if w.Code != http.StatusForbidden {
		t.Errorf("POST from another origin: %d; want 403", w.Code)
	}
	if spec, _ := config.LoadWorker(e.b.Home, "kreacher"); !spec.Paused {
		t.Fatal("a refused write changed the spec")
	}
}

func TestLoginCodeWorksOnceAndSetsAStrictCookie(t *testing.T) {
	e := newEnv(t)
	code := e.s.LoginCode()
	w := e.do("GET", "/login?code="+code, nil, noCookie)
	if w.Code != http.StatusSeeOther {
		t.Fatalf("login: %d; want 303", w.Code)
	}
	c := w.Result().Cookies()
	if len(c) != 1 || c[0].Value != testToken || !c[0].HttpOnly || c[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookie %+v; want the token, HttpOnly, SameSite=Strict", c)
	}
	if w := e.do("GET", "/login?code="+code, nil, noCookie); w.Code != http.StatusUnauthorized {
		t.Fatalf("the code used again: %d; want 401", w.Code)
	}
	w = e.do("POST", "/login", url.Values{"token": {testToken}}, noCookie)
	if w.Code != http.StatusSeeOther {
		t.Fatalf("login with the token: %d; want 303", w.Code)
	}
}

func TestEveryPageRendersAndEscapesBoxText(t *testing.T) {
	e := newEnv(t)
	pages := map[string][]string{
		"/":                                    {"dobby", "kreacher", "paused", "1 to review"},
		"/w/dobby":                             {e.b.HostileID, "nightly", "02:30", e.b.Run, "&lt;script&gt;"},
		"/r/" + e.b.Run:                        {"needs-review", "host_denied", "evil.example", "&lt;img src=x", "notes/", "class=\"refused\"", "e-assistant", "[tool read]", "[result read]", "I will look at the notes"},
		"/gates":                               {e.b.GateTask, "g1", "push branch docs-topics"},
		"/gates/dobby/" + e.b.GateTask + "/g1": {"approve", "&lt;script&gt;"},
		"/usage":                               {"<svg", "dobby", "test-model", "$0.00"},
		"/chat":                                {"desk:alice"},
		"/chat/dobby?channel=desk%3Aalice":     {"alice", "reply", "&lt;script&gt;"},
	}
	for path, want := range pages {
		body := e.get(path)
		for _, s := range want {
			if !strings.Contains(body, s) {
				t.Errorf("GET %s: no %q in the page", path, s)
			}
		}
		assertEscaped(t, body, path)
	}
	w := e.do("GET", "/", nil)
	if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
}

func TestGateApprovedFromTheWebIsJournaledByOperatorWeb(t *testing.T) {
	e := newEnv(t)
	w := e.do("POST", "/gates/dobby/"+e.b.GateTask+"/g1", url.Values{"csrf": {e.s.csrf}, "decision": {"approve"}, "why": {"looks right"}})
	if w.Code != http.StatusSeeOther {
		t.Fatalf("approve: %d\n%s", w.Code, w.Body)
	}
	p, _ := tms.Open(e.b.Home, "dobby", tms.Options{})
	lines, err := p.Journal(0)
	if err != nil {
		t.Fatal(err)
	}
	var resolved, completed bool
	for _, l := range lines {
		if l.Event == tms.EvGateResolved && l.Task == e.b.GateTask && l.By == By && l.Decision == tms.GateApproved {
			resolved = true
		}
		if l.Event == tms.EvCompleted && l.Task == e.b.GateTask && l.By == By {
			completed = true
		}
	}
	if !resolved || !completed {
		t.Fatalf("journal: gate-resolved by %q %v, completed %v", By, resolved, completed)
	}
	if w := e.do("POST", "/gates/dobby/"+e.b.GateTask+"/g1", url.Values{"csrf": {e.s.csrf}, "decision": {"deny"}}); w.Code == http.StatusSeeOther {
		t.Fatal("a decided gate was decided again")
	}
}

func TestPauseResumeAndRequeueAreTheCLIsWrites(t *testing.T) {
	e := newEnv(t)
	var logged bytes.Buffer
	e.s.cfg.Log = slog.New(slog.NewTextHandler(&logged, nil))
	if w := e.do("POST", "/w/kreacher/resume", url.Values{"csrf": {e.s.csrf}}); w.Code != http.StatusSeeOther {
		t.Fatalf("resume: %d\n%s", w.Code, w.Body)
	}
	if spec, _ := config.LoadWorker(e.b.Home, "kreacher"); spec.Paused {
		t.Fatal("resume left the worker paused")
	}
	if w := e.do("POST", "/w/kreacher/pause", url.Values{"csrf": {e.s.csrf}}); w.Code != http.StatusSeeOther {
		t.Fatalf("pause: %d\n%s", w.Code, w.Body)
	}
	if spec, _ := config.LoadWorker(e.b.Home, "kreacher"); !spec.Paused {
		t.Fatal("pause left the worker running")
	}
	for _, want := range []string{`msg="worker resumed" worker=kreacher by="operator (web)"`, `msg="worker paused" worker=kreacher by="operator (web)"`} {
		if !strings.Contains(logged.String(), want) {
			t.Errorf("the console's log lacks %s:\n%s", want, logged.String())
		}
	}
	if w := e.do("POST", "/w/dobby/requeue", url.Values{"csrf": {e.s.csrf}, "task": {e.b.GateTask}}); w.Code != http.StatusSeeOther {
		t.Fatalf("requeue: %d\n%s", w.Code, w.Body)
	}
	p, _ := tms.Open(e.b.Home, "dobby", tms.Options{})
	task, err := p.Get(context.Background(), e.b.GateTask)
	if err != nil || task.State != tms.Pending {
		t.Fatalf("requeued task: %+v %v; want pending", task.State, err)
	}
	lines, _ := p.Journal(0)
	if l := lines[len(lines)-1]; l.Event != tms.EvRequeued || l.By != By {
		t.Fatalf("last journal line %s by %q; want requeued by %q", l.Event, l.By, By)
	}
}

// Principle 4: a partition that cannot be read is shown as an error on
// its row, the other workers are shown, and the file is left as it is.
func TestUnreadableTasksAreShownNotRepaired(t *testing.T) {
	e := newEnv(t)
	path := e.b.Home.Worker("kreacher").TasksFile()
	if err := os.MkdirAll(e.b.Home.Worker("kreacher").Tasks(), 0o700); err != nil {
		t.Fatal(err)
	}
	bad := []byte(`{"format": 99}`)
	if err := os.WriteFile(path, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	body := e.get("/")
	if !strings.Contains(body, "unreadable") || !strings.Contains(body, "format 99") || !strings.Contains(body, "/w/dobby") {
		t.Fatalf("overview with a bad partition:\n%s", body)
	}
	if w := e.do("GET", "/w/kreacher", nil); w.Code != http.StatusUnprocessableEntity {
		t.Errorf("worker page of a bad partition: %d; want 422", w.Code)
	}
	if got, _ := os.ReadFile(path); string(got) != string(bad) {
		t.Fatalf("tasks.json was rewritten: %s", got)
	}
}

// A held push (repo_push): its page shows the diff from the host repo,
// and approving lands it, fast-forward, journaled by operator (web).
func TestHeldPushShowsItsDiffAndApprovalLandsIt(t *testing.T) {
	e := newEnv(t)
	hp, err := e.b.HeldPush(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	path := "/gates/dobby/" + hp.Task + "/g1"
	body := e.get(path)
	for _, want := range []string{"the change", "change.txt", "&#43;the change", "repo_push", "approve and land"} {
		if !strings.Contains(body, want) && !(want == "repo_push" && strings.Contains(e.get("/gates"), want)) {
			t.Errorf("gate page: no %q", want)
		}
	}
	assertEscaped(t, body, path)
	if w := e.do("POST", path, url.Values{"csrf": {e.s.csrf}, "decision": {"approve"}}); w.Code != http.StatusSeeOther {
		t.Fatalf("approve: %d\n%s", w.Code, w.Body)
	}
	if got := gitOut(t, hp.Repo, "rev-parse", "main"); got != hp.Head {
		t.Fatalf("main at %s after approval; want %s", got, hp.Head)
	}
	if refs := gitOut(t, hp.Repo, "for-each-ref", "refs/roster/"); refs != "" {
		t.Fatalf("the pending ref outlived the approval: %s", refs)
	}
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

// A live ad-hoc run begun yesterday is in no claim and not in today's
// usage: the overview still shows it working, from the box's scratch
// folder on this host and its box.json; once its box is gone it is not.
func TestOverviewShowsALiveRunBegunBeforeMidnight(t *testing.T) {
	e := newEnv(t)
	id, err := e.b.LiveRunSince(time.Now().Add(-30 * time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	link := `href="/r/` + id + `"`
	if page := e.get("/"); strings.Contains(page, link) {
		t.Fatalf("no box scratch folder, yet shown live:\n%s", page)
	}
	scratch := home.BoxScratch(id)
	if err := os.MkdirAll(scratch, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(scratch) })
	if page := e.get("/"); !strings.Contains(page, link) || !strings.Contains(page, "working") {
		t.Fatalf("the live run begun yesterday is not on the overview:\n%s", page)
	}
	os.Remove(home.BoxJSON(e.b.Home.Worker(e.b.Worker).Run(id)))
	if page := e.get("/"); strings.Contains(page, link) {
		t.Fatalf("a box without a live supervisor shown live:\n%s", page)
	}
}

// A live run's events: a line longer than maxLiveLine is passed over and
// said in one note of its length, written in pieces across polls as a
// box writes it; the lines around it arrive as entries; "end" closes the
// stream once the run is over.
func TestLiveEventsPassOverAnOverlongLine(t *testing.T) {
	e := newEnv(t)
	e.s.cfg.Poll = 10 * time.Millisecond
	id, err := e.b.LiveRun()
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 3<<20)
	go func() {
		time.Sleep(50 * time.Millisecond)
		e.b.AppendTranscript(id, long[:1<<20]) // half a line: waits for the rest
		time.Sleep(50 * time.Millisecond)
		e.b.AppendTranscript(id, long[1<<20:]+"\nafter the long line\n")
		time.Sleep(50 * time.Millisecond)
		e.b.End(id)
	}()
	w := e.do("GET", "/r/"+id+"/events?from=0", nil)
	body := w.Body.String()
	if w.Code != http.StatusOK || !strings.HasSuffix(body, "event: end\ndata: run over\n\n") {
		t.Fatalf("events: %d, ends %q", w.Code, body[max(0, len(body)-200):])
	}
	if strings.Contains(body, "xxxxxxxxxx") {
		t.Fatalf("a piece of the overlong line was sent (%d bytes of events)", len(body))
	}
	for _, want := range []string{"live run begins", "a line of 3145728 bytes, too long to follow live", "after the long line"} {
		if !strings.Contains(body, want) {
			t.Errorf("events lack %q:\n%s", want, body)
		}
	}
	if n := strings.Count(body, "too long to follow live"); n != 1 {
		t.Errorf("the overlong line said %d times", n)
	}
}
