package main

// The console in a real browser: Debian's chromium, headless, driven
// through the DevTools protocol (chromedp), against the real roster-web
// binary serving a home built through the libraries the command line
// writes with (lib/web/webtest). It logs in with the printed URL, opens
// every page, checks that text a box or a chat wrote never runs (no
// dialog opens, no planted element is in the DOM), follows a live run,
// approves a gate by a click and finds the journal line, and is refused
// without the token, with a foreign Host, and for a POST without the CSRF
// token. The overview's screenshot is kept (ROSTER_TEST_ARTIFACTS, else
// bin/test-artifacts/).
//
// Under CI (CI=true) a missing chromium fails the test; elsewhere it
// skips, saying how to install it.

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/roster-sh/roster/internal/testbin"
	"github.com/roster-sh/roster/lib/tms"
	"github.com/roster-sh/roster/lib/web"
	"github.com/roster-sh/roster/lib/web/webtest"
)

var bin string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "roster-web-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := testbin.Build(dir, "roster-web"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	bin = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// chromium finds Debian's browser; under CI its absence is a failure.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed, and CI must drive the console in a real browser (.ci/run installs Debian's chromium)")
	}
	t.Skip("chromium is not installed (apt-get install chromium; make deps-test installs it)")
	return ""
}

// console is a running `roster-web serve` on loopback.
type console struct {
	login string // the printed one-time login URL
	base  string // http://127.0.0.1:PORT
}

func startConsole(t *testing.T, h string) *console {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "roster-web"), "--home", h, "serve", "--listen", "127.0.0.1:0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("roster-web serve printed no login URL: %v", err)
	}
	u, err := url.Parse(strings.TrimSpace(line))
	if err != nil || u.Path != "/login" || u.Query().Get("code") == "" {
		t.Fatalf("login URL %q", line)
	}
	return &console{login: u.String(), base: u.Scheme + "://" + u.Host}
}

// browser starts headless chromium with a fresh profile and no traffic
// of its own (no background networking, updates or sync), and counts
// every JavaScript dialog that opens (dismissing it).
func browser(t *testing.T, exe string, dialogs *atomic.Int32) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	ctx, cancel3 := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(cancel3)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	events := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for _, err := range events {
			if err != nil {
				return
			}
			dialogs.Add(1)
			chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	}()
	return ctx
}

// planted counts the elements box text would have made had it been
// markup: any img (the console has none), and any script but its own.
const planted = `document.querySelectorAll('img').length + document.querySelectorAll('script:not([src="/static/live.js"])').length + document.querySelectorAll('main b').length`

func TestConsoleInARealBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no browser")
	}
	exe := chromium(t)
	if os.Geteuid() != 0 {
		t.Skip("worker add gives folders to box uids: run as root")
	}
	b, err := webtest.Build(context.Background(), t.TempDir(), 294100)
	if err != nil {
		t.Fatal(err)
	}
	live, err := b.LiveRun()
	if err != nil {
		t.Fatal(err)
	}
	hp, err := b.HeldPush(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := startConsole(t, b.Home.Dir)
	var dialogs atomic.Int32
	ctx := browser(t, exe, &dialogs)

	if err := chromedp.Do(ctx, chromedp.Navigate(c.login), chromedp.WaitVisible("#workers")); err != nil {
		t.Fatalf("log in with %s: %v", c.login, err)
	}
	text, err := chromedp.Run(ctx, chromedp.Text("#workers"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"dobby", "kreacher", "paused", live} {
		if !strings.Contains(text, want) {
			t.Errorf("overview: no %q in\n%s", want, text)
		}
	}
	keepScreenshot(t, ctx, "web-overview.png")

	pages := map[string]string{
		"/w/dobby":    b.HostileID,
		"/r/" + b.Run: "evil.example",
		"/gates":      b.GateTask,
		"/usage":      "test-model",
		"/chat":       b.Channel,
		"/chat/dobby?channel=" + url.QueryEscape(b.Channel): "alice",
		"/gates/dobby/" + b.GateTask + "/g1":                "push branch docs-topics",
	}
	for path, want := range pages {
		if err := chromedp.Do(ctx, chromedp.Navigate(c.base+path), chromedp.WaitReady("footer")); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		body, err := chromedp.Run(ctx, chromedp.Text("main"))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](planted))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if !strings.Contains(body, want) {
			t.Errorf("%s: no %q on the page", path, want)
		}
		if n != 0 {
			t.Errorf("%s: %d elements planted by box text are in the DOM", path, n)
		}
		if path == "/r/"+b.Run {
			keepScreenshot(t, ctx, "web-run.png")
		}
	}
	t.Log("every page opened")
	followLiveRun(t, ctx, b, c, live)
	t.Log("the live run followed")
	approveByClick(t, ctx, b, c)
	landByClick(t, ctx, b, c, hp)
	if n := dialogs.Load(); n != 0 {
		t.Errorf("%d JavaScript dialogs opened: box text ran as script", n)
	}
	refusals(t, c, b.Home.WebToken())
}

// followLiveRun opens a live run's page, appends to its transcript, and
// sees the line arrive (as text), then the end.
func followLiveRun(t *testing.T, ctx context.Context, b *webtest.Built, c *console, run string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(c.base+"/r/"+run), chromedp.WaitVisible("#live")); err != nil {
		t.Fatalf("live run page: %v", err)
	}
	if err := b.AppendTranscript(run, "a live line "+webtest.Hostile+"\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById('transcript').textContent.includes('a live line')`,
		chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("the appended line did not arrive: %v", err)
	}
	if err := b.End(run); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById('live').textContent.includes('over')`,
		chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("the run's end did not arrive: %v", err)
	}
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](planted))
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("live transcript: %d planted elements in the DOM", n)
	}
}

// approveByClick reads the gate, clicks approve, and finds the decision
// in the page and in the journal, by operator (web).
func approveByClick(t *testing.T, ctx context.Context, b *webtest.Built, c *console) {
	t.Helper()
	steps := []struct {
		what string
		do   chromedp.Action[chromedp.Void]
	}{
		{"open the gate", chromedp.Navigate(c.base + "/gates/dobby/" + b.GateTask + "/g1")},
		{"see approve", chromedp.WaitVisible("#approve")},
		{"say why", chromedp.SendKeys(`input[name="why"]`, "read it, fine")},
		{"click approve", chromedp.Click("#approve")},
		{"see the note", chromedp.WaitVisible("#note")},
	}
	for _, st := range steps {
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		err := chromedp.Do(sctx, st.do)
		cancel()
		if err != nil {
			body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText`))
			t.Fatalf("approve by click: %s: %v\n%s", st.what, err, body)
		}
	}
	note, err := chromedp.Run(ctx, chromedp.Text("#note"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(note, "approved") {
		t.Errorf("after the click: %q", note)
	}
	p, err := tms.Open(b.Home, b.Worker, tms.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lines, err := p.Journal(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		if l.Event == tms.EvGateResolved && l.Task == b.GateTask && l.Gate == "g1" && l.By == web.By && l.Decision == tms.GateApproved && l.Reason == "read it, fine" {
			return
		}
	}
	t.Fatalf("no gate-resolved line by %q for %s g1 in the journal", web.By, b.GateTask)
}

// landByClick reads a held push's diff in the page and approves it with
// a click: the host repo's main moves to the pushed commit.
func landByClick(t *testing.T, ctx context.Context, b *webtest.Built, c *console, hp *webtest.HeldPush) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(c.base+"/gates/dobby/"+hp.Task+"/g1"), chromedp.WaitVisible("#diff")); err != nil {
		t.Fatalf("held push page: %v", err)
	}
	diff, err := chromedp.Run(ctx, chromedp.Text("#diff"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(diff, "+the change <script>") || !strings.Contains(diff, "change.txt") {
		t.Fatalf("the diff shown:\n%s", diff)
	}
	if err := chromedp.Do(ctx, chromedp.Click("#approve"), chromedp.WaitVisible("#note")); err != nil {
		t.Fatalf("approve the push: %v", err)
	}
	out, err := exec.Command("git", "-C", hp.Repo, "rev-parse", "main").Output()
	if err != nil || strings.TrimSpace(string(out)) != hp.Head {
		t.Fatalf("main at %s (%v) after the click; want %s", out, err, hp.Head)
	}
}

// refusals: no token, a foreign Host, a POST without the CSRF token.
func refusals(t *testing.T, c *console, tokenFile string) {
	t.Helper()
	get := func(req *http.Request) (int, string) {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	req, _ := http.NewRequest("GET", c.base+"/", nil)
	if code, body := get(req); code != http.StatusUnauthorized || strings.Contains(body, "dobby") {
		t.Errorf("no token: %d", code)
	}
	data, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimSpace(string(data))
	req, _ = http.NewRequest("GET", c.base+"/", nil)
	req.Host = "rebound.example:8790"
	req.AddCookie(&http.Cookie{Name: "roster_web", Value: tok})
	if code, _ := get(req); code != http.StatusMisdirectedRequest {
		t.Errorf("foreign Host: %d; want 421", code)
	}
	req, _ = http.NewRequest("POST", c.base+"/w/kreacher/resume", strings.NewReader("x=1"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: "roster_web", Value: tok})
	if code, _ := get(req); code != http.StatusForbidden {
		t.Errorf("POST without the CSRF token: %d; want 403", code)
	}
	req, _ = http.NewRequest("GET", c.base+"/", nil)
	req.AddCookie(&http.Cookie{Name: "roster_web", Value: tok})
	if code, _ := get(req); code != http.StatusOK {
		t.Errorf("with the token: %d; want 200 (the refusals above prove nothing)", code)
	}
}

// keepScreenshot saves the page as a PNG test artifact.
func keepScreenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	dir := os.Getenv("ROSTER_TEST_ARTIFACTS")
	if dir == "" {
		root, err := testbin.Root()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, "bin", "test-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", filepath.Join(dir, name))
}
