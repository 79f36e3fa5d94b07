package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
)

const fullOrg = `
[storage]
store.snapshots = 7
store.daily = 3
store.min_free = "512MiB"
store.max = "20GiB"
runs.keep = 50

[dispatch]
cap = 5
poll = "500ms"
credentials = ["file:/etc/roster/model-key", "env:MODEL_KEY"]

[ceilings]
filed = "31m"
recurring = "21m"
heartbeat = "22m"
relay = "16m"
continuation = "33m"
adhoc = "34m"

[budget]
proactive = "3h"
`

func TestOrgEveryKeyParses(t *testing.T) {
	o, err := ParseOrg("org.toml", []byte(fullOrg))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"store.snapshots", o.Storage.Snapshots, 7},
		{"store.daily", o.Storage.Daily, 3},
		{"store.min_free", o.Storage.MinFree, int64(512 << 20)},
		{"store.max", o.Storage.Max, int64(20 << 30)},
		{"runs.keep", o.Storage.RunsKeep, 50},
		{"cap", o.Dispatch.Cap, 5},
		{"poll", o.Dispatch.Poll, 500 * time.Millisecond},
		{"credentials", o.Dispatch.Credentials, []string{"file:/etc/roster/model-key", "env:MODEL_KEY"}},
		{"filed", o.Ceiling("filed"), 31 * time.Minute},
		{"recurring", o.Ceiling("recurring"), 21 * time.Minute},
		{"heartbeat", o.Ceiling("heartbeat"), 22 * time.Minute},
		{"relay", o.Ceiling("relay"), 16 * time.Minute},
		{"continuation", o.Ceiling("continuation"), 33 * time.Minute},
		{"adhoc", o.Ceiling("adhoc"), 34 * time.Minute},
		{"proactive", o.Budget.Proactive, 3 * time.Hour},
		{"unlimited", o.Budget.Unlimited, false},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestOrgDefaults(t *testing.T) {
	for _, text := range []string{"", DefaultOrgTOML} {
		o, err := ParseOrg("org.toml", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		want := &Org{}
		want.Storage.Snapshots = 14
		want.Storage.UndoDays = 30
		want.Storage.Daily = 7
		want.Storage.MinFree = 1 << 30
		want.Storage.RunsKeep = 1000
		want.Dispatch.Cap = 3
		want.Dispatch.Poll = 2 * time.Second
		want.Dispatch.Credentials = []string{}
		want.Dispatch.RetryBackoff = []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour}
		want.Notify.OnFailure = []string{}
		want.Ceilings.Filed = 30 * time.Minute
		want.Ceilings.Recurring = 20 * time.Minute
		want.Ceilings.Heartbeat = 20 * time.Minute
		want.Ceilings.Relay = 15 * time.Minute
		want.Ceilings.Continuation = 30 * time.Minute
		want.Ceilings.Adhoc = 30 * time.Minute
		want.Budget.Proactive = 2 * time.Hour
		want.Budget.Starts = DefaultProactiveStarts
		want.Gateway.Providers = BuiltinProviders()
		want.Gateway.Prices = map[string]Price{}
		want.Dispatch.ChatCap = 4
		want.Ceilings.Live = 4 * time.Hour
		want.Chat.Accounts = map[string]ChatAccount{}
		want.Chat.BudgetNotice = true
		if !reflect.DeepEqual(o, want) {
			t.Errorf("defaults of %q:\n got %+v\nwant %+v", text, o, want)
		}
	}
}

func TestOrgMissingFileIsDefaults(t *testing.T) {
	h := home.Home{Dir: t.TempDir()}
	o, err := LoadOrg(h)
	if err != nil {
		t.Fatal(err)
	}
	if o.Dispatch.Cap != 3 || o.Ceiling("relay") != 15*time.Minute {
		t.Fatalf("got %+v", o)
	}
}

func TestOrgBudgetOffIsUnlimited(t *testing.T) {
	o, err := ParseOrg("org.toml", []byte("[budget]\nproactive = \"off\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if o.Budget.Starts != DefaultProactiveStarts {
		t.Fatalf("proactive_starts default %d", o.Budget.Starts)
	}
	if !o.Budget.Unlimited || o.Budget.Proactive != 0 {
		t.Fatalf("got %+v", o.Budget)
	}
}

// refused asserts err is a refusal (exit 14) whose text holds every want.
func refused(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted; want a refusal mentioning %q", want)
	}
	if !errors.Is(err, errs.ErrRefused) {
		t.Errorf("%v: not a refusal (exit 14)", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}

func TestOrgUnknownKeyNamesKeyAndLine(t *testing.T) {
	_, err := ParseOrg("/h/org.toml", []byte("[dispatch]\ncap = 2\npol = \"1s\"\n"))
	refused(t, err, "/h/org.toml:3:", `unknown key "dispatch.pol"`)
	_, err = ParseOrg("/h/org.toml", []byte("[storage]\nstore.snapshot = 3\n"))
	refused(t, err, "/h/org.toml:2:", `"storage.store.snapshot"`)
	_, err = ParseOrg("/h/org.toml", []byte("\n\n[bogus]\n"))
	refused(t, err, ":3:", `"bogus"`)
}

func TestOrgBadValuesRefused(t *testing.T) {
	cases := []struct{ text, want string }{
		{"[storage]\nstore.snapshots = -1\n", ":2: storage.store.snapshots"},
		{"[storage]\nstore.min_free = \"1GB\"\n", ":2: storage.store.min_free"},
		{"[storage]\nruns.keep = 0\n", "storage.runs.keep"},
		{"[storage]\nstore.max = \"20GB\"\n", ":2: storage.store.max"},
		{"[storage]\nstore.max = \"1K\"\n", ":2: storage.store.max: must be \"\" (no bound) or at least 4K"},
		{"[storage]\nstore.max = -1\n", ":2: storage.store.max"},
		{"[storage]\nstore.daily = -1\n", ":2: storage.store.daily: must be 0"},
		{"[dispatch]\ncap = 0\n", ":2: dispatch.cap"},
		{"[dispatch]\ncap = \"3\"\n", ":2: dispatch.cap: cannot use a string here (want an integer)"},
		{"[dispatch]\npoll = \"2\"\n", "dispatch.poll"},
		{"[dispatch]\npoll = \"off\"\n", "dispatch.poll"},
		{"[dispatch]\ncredentials = [\"key\"]\n", "\"file:PATH\" or \"env:NAME\""},
		{"[dispatch]\ncredentials = [\"file:rel/key\"]\n", "absolute"},
		{"[dispatch]\ncredentials = [\"env:A-B\"]\n", "environment variable"},
		{"[ceilings]\nrelay = \"-5m\"\n", ":2: ceilings.relay"},
		{"[ceilings]\nfiled = \"off\"\n", "ceilings.filed"},
		{"[budget]\nproactive = \"2 hours\"\n", ":2: budget.proactive"},
		{"[budget]\nproactive_starts = -1\n", ":2: budget.proactive_starts: must be 0 (no limit) or more"},
		{"[budget]\nproactive_starts = \"many\"\n", ":2: budget.proactive_starts"},
		{"[dispatch]\ncap = 1\ncap = 2\n", ":3:"},
		{"[dispatch\n", ":1:"},
	}
	for _, c := range cases {
		_, err := ParseOrg("org.toml", []byte(c.text))
		refused(t, err, "org.toml", c.want)
	}
}

const fullWorker = `
role = "You keep the docs site healthy."
command = ["/usr/local/bin/agent", "--briefing", "/home/worker/self/briefing.md"]
heartbeat = "45m"
uid = 200001
concurrency = 2
rootfs = "/srv/rootfs"
network = "host"
pass_env = ["LANG", "MODEL_KEY"]
memory = "3GiB"
host_memory = "256M"
host_cpus = 1.25
pids = 100
cpus = 1.5
idle = "10m"
paused = true

[[connection]]
name = "docs"
path = "/srv/docs/"
at = "docs"
mode = "ro"

[[connection]]
name = "cache"
path = "/var/cache/x"
at = "cache"
mode = "rw"
`

func TestWorkerEveryKeyParses(t *testing.T) {
	w, err := ParseWorker("dobby", "dobby.toml", []byte(fullWorker))
	if err != nil {
		t.Fatal(err)
	}
	want := &Worker{
		Name: "dobby", Role: "You keep the docs site healthy.",
		Command:   []string{"/usr/local/bin/agent", "--briefing", "/home/worker/self/briefing.md"},
		Heartbeat: 45 * time.Minute, UID: 200001, Concurrency: 2, Rootfs: "/srv/rootfs",
		Network: "host", PassEnv: []string{"LANG", "MODEL_KEY"}, Memory: 3 << 30, HostMemory: 256 << 20, HostCPUs: 1.25, Pids: 100,
		CPUs: 1.5, Idle: 10 * time.Minute, Paused: true,
		Connections: []Connection{
			{Name: "docs", Path: "/srv/docs", At: "docs", Mode: "ro"},
			{Name: "cache", Path: "/var/cache/x", At: "cache", Mode: "rw"},
		},
		Warnings: []string{
			`worker dobby: network = "host": its boxes reach host-local services`,
			`worker dobby: connection "cache" is rw: no snapshots, no undo`,
		},
		File: "dobby.toml",
	}
	if !reflect.DeepEqual(w, want) {
		t.Errorf("\n got %+v\nwant %+v", w, want)
	}
}

func TestWorkerDefaults(t *testing.T) {
	w, err := ParseWorker("dobby", "dobby.toml", []byte("command = [\"/bin/true\"]\nuid = 200000\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := &Worker{Name: "dobby", Command: []string{"/bin/true"}, Heartbeat: 30 * time.Minute,
		UID: 200000, Concurrency: 1, Network: "gateway", PassEnv: []string{}, Memory: 2 << 30, HostMemory: 512 << 20, HostCPUs: DefaultHostCPUs,
		Pids: 512, CPUs: 1, File: "dobby.toml"}
	if !reflect.DeepEqual(w, want) {
		t.Errorf("\n got %+v\nwant %+v", w, want)
	}
}

func TestWorkerOffDisablesHeartbeatAndIdle(t *testing.T) {
	w, err := ParseWorker("d", "d.toml", []byte("command = [\"/bin/true\"]\nuid = 7\nheartbeat = \"off\"\nidle = \"off\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if w.Heartbeat != 0 || w.Idle != 0 {
		t.Fatalf("got heartbeat %v idle %v", w.Heartbeat, w.Idle)
	}
}

func TestWorkerWithoutCommandIsWarned(t *testing.T) {
	w, err := ParseWorker("d", "d.toml", []byte("uid = 7\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Warnings) != 1 || !strings.Contains(w.Warnings[0], "no command") {
		t.Fatalf("warnings %q", w.Warnings)
	}
}

func TestWorkerUnknownKeyNamesKeyAndLine(t *testing.T) {
	_, err := ParseWorker("d", "/h/workers/d.toml", []byte("uid = 7\nhearbeat = \"1h\"\n"))
	refused(t, err, "/h/workers/d.toml:2:", `unknown key "hearbeat"`)
	_, err = ParseWorker("d", "/h/workers/d.toml", []byte("uid = 7\n[[connection]]\nname = \"a\"\npath = \"/a\"\nat = \"a\"\nmod = \"ro\"\n"))
	refused(t, err, ":6:", `"connection.mod"`)
}

func TestWorkerBadValuesRefused(t *testing.T) {
	conn := func(name, path, at, mode string) string {
		return "uid = 7\n[[connection]]\nname = \"" + name + "\"\npath = \"" + path + "\"\nat = \"" + at + "\"\nmode = \"" + mode + "\"\n"
	}
	cases := []struct{ text, want string }{
		{"command = [\"/bin/true\"]\n", "uid: missing"},
		{"uid = 0\n", ":1: uid"},
		{"uid = -4\n", ":1: uid"},
		{"uid = \"200000\"\n", ":1: uid"},
		{"uid = 7\ncommand = [\"/bin/x\", \"\"]\n", ":2: command"},
		{"uid = 7\ncommand = \"/bin/x\"\n", ":2: command"},
		{"uid = 7\nheartbeat = \"30\"\n", ":2: heartbeat"},
		{"uid = 7\nconcurrency = 0\n", ":2: concurrency"},
		{"uid = 7\nrootfs = \"rel\"\n", ":2: rootfs"},
		{"uid = 7\nnetwork = \"bridge\"\n", `:2: network: "bridge" must be "gateway", "none" or "host"`},
		{"uid = 7\npass_env = [\"A=B\"]\n", ":2: pass_env"},
		{"uid = 7\nmemory = \"2X\"\n", ":2: memory"},
		{"uid = 7\nmemory = \"10\"\n", ":2: memory: must be at least 1M"},
		{"uid = 7\nhost_memory = \"16M\"\n", ":2: host_memory: must be at least 32M"},
		{"uid = 7\nhost_cpus = 0\n", ":2: host_cpus: must be a number of cores"},
		{"uid = 7\n[gateway]\ninflight = 1000\n", ":3: gateway.inflight: 1000"},
		{"uid = 7\nhost_memory = \"lots\"\n", ":2: host_memory"},
		{"uid = 7\npids = 0\n", ":2: pids"},
		{"uid = 7\ncpus = 0\n", ":2: cpus"},
		{"uid = 7\ncpus = nan\n", ":2: cpus"},
		{"uid = 7\nidle = \"soon\"\n", ":2: idle"},
		{"uid = 7\npaused = \"yes\"\n", ":2: paused"},
		{conn("Docs", "/a", "a", "ro"), ":3: connection.name"},
		{conn("a", "rel", "a", "ro"), ":4: connection.path"},
		{conn("a", "/a", "..", "ro"), ":5: connection.at"},
		{conn("a", "/a", "x/y", "ro"), ":5: connection.at"},
		{conn("a", "/a", ".hidden", "ro"), ":5: connection.at"},
		{conn("a", "/a", "store", "ro"), ":5: connection.at"},
		{conn("a", "/a", "self", "ro"), ":5: connection.at"},
		{conn("a", "/a", "channel", "ro"), ":5: connection.at"},
		{conn("a", "/a", "a", "wr"), `:6: connection.mode: "wr" must be "ro" or "rw"`},
		{"uid = 7\n[[connection]]\nname = \"a\"\npath = \"/a\"\nmode = \"ro\"\n", ":2: connection.at"},
		{conn("a", "/a", "a", "ro") + "[[connection]]\nname = \"a\"\npath = \"/b\"\nat = \"b\"\nmode = \"ro\"\n", ":8: connection.name: \"a\" is given twice"},
	}
	for _, c := range cases {
		_, err := ParseWorker("d", "d.toml", []byte(c.text))
		refused(t, err, "d.toml", c.want)
	}
}

func writeSpec(t *testing.T, h home.Home, name, text string) {
	t.Helper()
	if err := os.MkdirAll(h.WorkersDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.SpecFile(name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadWorkerNameRuleIsUsage(t *testing.T) {
	h := home.Home{Dir: t.TempDir()}
	for _, n := range []string{"Dobby", "1x", "", "a/b", "../x", strings.Repeat("a", 64)} {
		_, err := LoadWorker(h, n)
		if !errors.Is(err, errs.ErrUsage) || !strings.Contains(err.Error(), "a lower-case letter") {
			t.Errorf("%q: got %v, want a usage error stating the rule", n, err)
		}
	}
}

func TestLoadWorkerMissingIsNoHome(t *testing.T) {
	h := home.Home{Dir: t.TempDir()}
	_, err := LoadWorker(h, "ghost")
	if !errors.Is(err, errs.ErrNoHome) || errs.HintOf(err) == "" {
		t.Fatalf("got %v (hint %q), want no-home with a hint", err, errs.HintOf(err))
	}
}

func TestListWorkersSortedAndOnlyValidNames(t *testing.T) {
	h := home.Home{Dir: t.TempDir()}
	if names, err := ListWorkers(h); err != nil || len(names) != 0 {
		t.Fatalf("no workers/: %v %v", names, err)
	}
	for _, n := range []string{"zed", "alpha", "mid"} {
		writeSpec(t, h, n, "uid = 7\n")
	}
	os.WriteFile(filepath.Join(h.WorkersDir(), "Bad.toml"), nil, 0o644)
	os.WriteFile(filepath.Join(h.WorkersDir(), "notes.txt"), nil, 0o644)
	names, err := ListWorkers(h)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(names, []string{"alpha", "mid", "zed"}) {
		t.Fatalf("got %q", names)
	}
}

func TestRenderWorkerParsesBack(t *testing.T) {
	data, err := RenderWorker(NewWorker{Name: "dobby", Role: `say "hi"` + "\n\tok", Command: []string{"/bin/agent", "--x", `a"b`},
		Heartbeat: "off", UID: 200003, Concurrency: 2, Network: "host"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := ParseWorker("dobby", "dobby.toml", data)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if w.Role != "say \"hi\"\n\tok" || !reflect.DeepEqual(w.Command, []string{"/bin/agent", "--x", `a"b`}) ||
		w.Heartbeat != 0 || w.UID != 200003 || w.Concurrency != 2 || w.Network != "host" || w.Memory != 2<<30 {
		t.Fatalf("got %+v\n%s", w, data)
	}
	// Only what was given is set; the rest are defaults.
	data, err = RenderWorker(NewWorker{Name: "d", UID: 200000})
	if err != nil {
		t.Fatal(err)
	}
	w, err = ParseWorker("d", "d.toml", data)
	if err != nil || w.Heartbeat != 30*time.Minute || w.Concurrency != 1 || w.Network != "gateway" || len(w.Command) != 0 {
		t.Fatalf("got %+v %v\n%s", w, err, data)
	}
}

func TestSetPausedKeepsTheRestOfTheText(t *testing.T) {
	cases := []struct{ before, after string }{
		// an existing line: only its value changes, comments kept
		{"uid = 7 # me\npaused = false   # note\nrole = \"x\"\n", "uid = 7 # me\npaused = true   # note\nrole = \"x\"\n"},
		// none: inserted before the first table
		{"uid = 7\n\n# the docs\n[[connection]]\nname = \"a\"\npath = \"/a\"\nat = \"a\"\nmode = \"ro\"\n",
			"uid = 7\n\n# the docs\npaused = true\n\n[[connection]]\nname = \"a\"\npath = \"/a\"\nat = \"a\"\nmode = \"ro\"\n"},
		// none and no table: appended
		{"uid = 7", "uid = 7\npaused = true\n"},
		// the commented default line comes to life
		{"uid = 7\n# paused = false       # set by pause\n", "uid = 7\npaused = true       # set by pause\n"},
		// a commented line with more after its value is prose: left as it is
		{"uid=1\n# paused = false 00", "uid=1\n# paused = false 00\npaused = true\n"},
		{"uid = 7\n# paused = false, the default\n", "uid = 7\n# paused = false, the default\npaused = true\n"},
		// a look-alike inside a multi-line string is not touched
		{"uid = 7\nrole = \"\"\"\n# paused = false\n\"\"\"\n", "uid = 7\nrole = \"\"\"\n# paused = false\n\"\"\"\npaused = true\n"},
	}
	for _, c := range cases {
		h := home.Home{Dir: t.TempDir()}
		writeSpec(t, h, "d", c.before)
		if err := SetPaused(h, "d", true); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(h.SpecFile("d"))
		// the pause's own mark, where the line has no comment of the operator's
		since := regexp.MustCompile(` # since 20\d\d-\d\d-\d\dT\d\d:\d\d:\d\dZ`)
		marked := since.Match(got)
		if string(since.ReplaceAll(got, nil)) != c.after {
			t.Errorf("SetPaused(%q):\n got %q\nwant %q", c.before, got, c.after)
		}
		own := strings.Contains(c.after, "paused = true   # note") || strings.Contains(c.after, "paused = true       #")
		w, _ := LoadWorker(h, "d")
		if marked == own || w == nil || w.PausedSince.IsZero() == !own {
			t.Errorf("SetPaused(%q): marked %v, since %v: %q", c.before, marked, w, got)
		}
		if err := SetPaused(h, "d", false); err != nil {
			t.Fatal(err)
		}
		w, err := LoadWorker(h, "d")
		got, _ = os.ReadFile(h.SpecFile("d"))
		if err != nil || w.Paused || !w.PausedSince.IsZero() || strings.Contains(string(got), "since") {
			t.Errorf("resume: %+v %v: %q", w, err, got)
		}
	}
}

func TestSetPausedRefusesCorruptSpecUntouched(t *testing.T) {
	h := home.Home{Dir: t.TempDir()}
	writeSpec(t, h, "d", "uid = 7\nbogus = 1\n")
	err := SetPaused(h, "d", true)
	refused(t, err, "bogus")
	got, _ := os.ReadFile(h.SpecFile("d"))
	if string(got) != "uid = 7\nbogus = 1\n" {
		t.Fatalf("file changed: %q", got)
	}
}

func TestParseSize(t *testing.T) {
	good := map[string]int64{"0": 0, "100": 100, "1K": 1024, "1k": 1024, "1KiB": 1024, "2G": 2 << 30,
		"2GiB": 2 << 30, "512M": 512 << 20, "3MiB": 3 << 20, "1T": 1 << 40, "1tib": 1 << 40, "7B": 7, "8388607T": 8388607 << 40}
	for s, want := range good {
		got, err := ParseSize(s)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "G", "-1G", "1.5G", "1GB", "1 X", "8388608T", "99999999999999999999"} {
		if n, err := ParseSize(s); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", s, n)
		}
	}
}

func TestParseDuration(t *testing.T) {
	if d, err := ParseDuration("off", true); err != nil || d != 0 {
		t.Errorf("off: %v %v", d, err)
	}
	for _, s := range []string{"off", "0s", "-1m", "30", ""} {
		if _, err := ParseDuration(s, false); err == nil {
			t.Errorf("ParseDuration(%q, false) accepted", s)
		}
	}
	if d, err := ParseDuration("1h30m", false); err != nil || d != 90*time.Minute {
		t.Errorf("1h30m: %v %v", d, err)
	}
	for d, s := range map[time.Duration]string{0: "off", 30 * time.Minute: "30m", 2 * time.Hour: "2h", 90 * time.Minute: "1h30m", 2 * time.Second: "2s"} {
		if got := FormatDuration(d); got != s {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, s)
		}
	}
}

func TestOrgWrongTypeNamesKeyAndType(t *testing.T) {
	_, err := ParseOrg("org.toml", []byte("[storage]\nstore = 5\n"))
	refused(t, err, "org.toml:2: storage.store: cannot use an integer here (want a table)")
}

func TestOrgRetryBackoffAndNotify(t *testing.T) {
	o, err := ParseOrg("/h/org.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := []time.Duration{o.RetryWait(1), o.RetryWait(2), o.RetryWait(4), o.RetryWait(9)}; got[0] != time.Minute || got[1] != 5*time.Minute || got[2] != 2*time.Hour || got[3] != 2*time.Hour {
		t.Fatalf("default backoff waits %v, want 1m 5m 2h 2h (the last repeats)", got)
	}
	if len(o.Notify.OnFailure) != 0 {
		t.Fatalf("on_failure default %q, want none", o.Notify.OnFailure)
	}
	o, err = ParseOrg("/h/org.toml", []byte("[dispatch]\nretry_backoff = [\"1s\"]\n[notify]\non_failure = [\"/bin/echo\", \"x\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if o.RetryWait(3) != time.Second || len(o.Notify.OnFailure) != 2 {
		t.Fatalf("got %v %q", o.RetryWait(3), o.Notify.OnFailure)
	}
	for _, c := range []struct{ text, want string }{
		{"[dispatch]\nretry_backoff = []\n", ":2: dispatch.retry_backoff"},
		{"[dispatch]\nretry_backoff = [\"soon\"]\n", ":2: dispatch.retry_backoff"},
		{"[notify]\non_failure = [\"\"]\n", ":2: notify.on_failure"},
		{"[notify]\non_failure = \"/bin/page\"\n", "notify.on_failure"},
	} {
		_, err := ParseOrg("/h/org.toml", []byte(c.text))
		refused(t, err, c.want)
	}
}
