package tms

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// jsonEntry is what encoding/json writes for v with HTML escaping off.
func jsonEntry(t testing.TB, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// richFile has every field of every entry set, and strings that need
// escaping.
func richFile() *File {
	at := time.Date(2026, 11, 29, 19, 22, 1, 123456789, time.UTC)
	off := time.Date(2026, 3, 29, 2, 30, 0, 0, time.FixedZone("", 2*3600))
	return &File{Format: Format, Version: 42, Tasks: []Task{
		{ID: "t-2026-11-29-19-22-01-k3v9", Text: "say \"hi\"\n\tto <a&b> \\ é 日本 \u2028 \u2029 \x01 \xff end", Kind: KindFiled,
			Standing: Owner, State: Claimed, CreatedAt: at, ScheduledAt: &off, DependsOn: []string{"t-a", "t-\"b"},
			Settled: map[string]string{"t-z": Completed, "t-a": Failed, "<k>": Canceled}, Ceiling: "45m", Channel: "slack:C01/th 1",
			From: "ann", Template: "nightly", Slot: &at, Priority: -3, By: ByWorker, Attempts: 2, Retries: 3, Retried: 1,
			Claim: &Claim{Run: "2026-11-29-19-22-03-q8w2", At: at},
			Gates: []Gate{{ID: "g1", What: "push", State: GatePending, Wake: true}, {ID: "g2", What: "x", State: GateDenied, Why: "no", ResolvedAt: &at},
				{ID: "g3", What: "push main", State: GatePending, Kind: GateRepoPush, Push: &RepoPush{Repo: "app", Ref: "refs/heads/main", Old: "a\"1", New: "b2", Pending: "refs/roster/pending/r-1"}}},
			Continues: "t-c", RefiledFrom: "t-r", FiledBy: "run", LastRun: "run2", FinishedAt: &at},
		{ID: "t-plain", Text: "plain", Kind: KindRelay, Standing: Proactive, State: Pending, CreatedAt: at, By: ByOwner},
	}, Templates: []Template{
		{ID: "heartbeat", System: true, Cron: "@every 30m", Text: HeartbeatText, Standing: Proactive, By: ByHost, CatchUp: "latest", Overlap: OverlapForbid, Cursor: &at},
		{ID: "n", Cron: "CRON_TZ=Europe/Berlin 0 2 * * *", Text: "nightly \"x\"", Standing: Owner, By: ByOwner, Window: "1h", CatchUp: "none",
			Overlap: OverlapAllow, Ceiling: "10m", Priority: 5, Retries: 2, Channel: "c", Disabled: true, Last: &TemplateLast{Task: "t-x", At: at, State: Failed, Run: "r"}},
	}}
}

func TestFastEncodeMatchesJSON(t *testing.T) {
	f := richFile()
	for i := range f.Tasks {
		got, err := appendTask(nil, &f.Tasks[i])
		if err != nil {
			t.Fatal(err)
		}
		if want := jsonEntry(t, &f.Tasks[i]); !bytes.Equal(got, want) {
			t.Errorf("task %d:\n got %s\nwant %s", i, got, want)
		}
	}
	for i := range f.Templates {
		got, err := appendTemplate(nil, &f.Templates[i])
		if err != nil {
			t.Fatal(err)
		}
		if want := jsonEntry(t, &f.Templates[i]); !bytes.Equal(got, want) {
			t.Errorf("template %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

func TestFastDecodeReadsWhatEncodingJSONReads(t *testing.T) {
	data := encodeFile(richFile(), "w", t0)
	f, hasFormat, ok := decodeFast(data)
	if !ok || !hasFormat {
		t.Fatalf("the writer's own output took the slow path: ok=%v format=%v", ok, hasFormat)
	}
	var want File
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*f, want) {
		t.Fatalf("fast decode differs:\n got %+v\nwant %+v", *f, want)
	}
}

// Text the writer never writes goes to encoding/json, which reads it (or
// refuses it) as before.
func TestDecodeFileFallsBackForTextTheWriterNeverWrites(t *testing.T) {
	const valid = `"kind":"filed","standing":"owner","state":"pending","by":"owner"`
	for _, c := range []struct{ name, text, id string }{
		{"key in another case", `{"format":1,"version":1,"tasks":[{"ID":"t-a","created_at":"2026-01-01T00:00:00Z",` + valid + `}]}`, "t-a"},
		{"unknown key", `{"format":1,"version":1,"extra":[1,{"x":null}],"tasks":[{"id":"t-b","new_field":true,` + valid + `}]}`, "t-b"},
		{"escaped key", `{"format":1,"version":1,"tasks":[{"\u0069d":"t-c",` + valid + `}]}`, "t-c"},
		{"duplicate key", `{"format":1,"version":1,"tasks":[{"id":"t-x","id":"t-d",` + valid + `}]}`, "t-d"},
		{"null", `{"format":1,"version":1,"tasks":[{"id":"t-e","claim":null,"depends_on":null,` + valid + `}]}`, "t-e"},
	} {
		if _, _, ok := decodeFast([]byte(c.text)); ok {
			t.Errorf("%s: fast path accepted it", c.name)
		}
		f, err := DecodeFile("tasks.json", []byte(c.text))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if len(f.Tasks) != 1 || f.Tasks[0].ID != c.id {
			t.Errorf("%s: read %+v", c.name, f.Tasks)
		}
	}
	for _, bad := range []string{
		`{"format":1,"version":1,"tasks":[{"id":"t-a","priority":1.5}]}`,
		`{"format":1,"version":1,"tasks":[{"id":"t-a","priority":"1"}]}`,
		`{"format":1,"version":1,"tasks":[{"id":"t-a","created_at":"yesterday"}]}`,
		`{"format":1,"version":1,"tasks":[{"id":"t-a","text":"bad \x escape"}]}`,
		`{"format":1,"version":1,"tasks":[{"id":"t-a"}]} trailing`,
		`{"format":1,"version":99999999999999999999}`,
		`{"format":1,"version":01}`,
		"{\"format\":1,\"version\":1,\"tasks\":[{\"id\":\"t-a\",\"text\":\"raw\ncontrol\"}]}",
	} {
		if _, err := DecodeFile("tasks.json", []byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

func FuzzFastDecode(f *testing.F) {
	f.Add(encodeFile(richFile(), "", time.Time{}))
	f.Add(encodeFile(richFile(), "w", t0))
	f.Add([]byte(`{"format":1,"version":-0,"tasks":[{"id":"\u00e9\ud800","settled":{"a":"b","a":"c"}}],"templates":[{"id":"x","system":false,"priority":-1}]}`))
	f.Add([]byte(`{"format":1,"tasks":[{"created_at":"2026-01-01T00:00:00+01:00","gates":[],"depends_on":[]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		// Add's raw read accepts only what DecodeFile reads, and keeps
		// each task as bytes that read as DecodeFile's task.
		if r, rf, ok := decodeRaw(data); ok {
			full, err := DecodeFile("tasks.json", data)
			if err != nil {
				t.Fatalf("raw read accepted what DecodeFile refuses (%v): %q", err, data)
			}
			if r.n != len(full.Tasks) || rf.Version != full.Version || !reflect.DeepEqual(rf.Templates, full.Templates) {
				t.Fatalf("raw read differs from DecodeFile: %q", data)
			}
			checkRaw(t, r, full, data)
		}
		// Whatever DecodeFile reads, the writer writes in the form a
		// sealed read takes as it is (and reads as DecodeFile does); any
		// other text may be refused by a sealed read, never panic it.
		decodeSealed(data)
		if full, err := DecodeFile("tasks.json", data); err == nil {
			if enc := encodeFile(full, "", t0); enc != nil {
				r, sf, ok := decodeSealed(enc)
				if !ok || sf.Version != full.Version || len(sf.Templates) != len(full.Templates) ||
					(len(sf.Templates) > 0 && !reflect.DeepEqual(sf.Templates, full.Templates)) {
					t.Fatalf("the writer's form of %q does not read sealed as DecodeFile reads it: %q", data, enc)
				}
				checkRaw(t, r, full, enc)
			}
		}
		got, _, ok := decodeFast(data)
		if !ok {
			return
		}
		var want File
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("fast path accepted what encoding/json refuses (%v): %q", err, data)
		}
		if !reflect.DeepEqual(*got, want) {
			t.Fatalf("fast path reads %q differently:\n got %+v\nwant %+v", data, *got, want)
		}
		for i := range got.Tasks {
			b, err := appendTask(nil, &got.Tasks[i])
			if err != nil {
				t.Fatal(err)
			}
			if w := jsonEntry(t, &got.Tasks[i]); !bytes.Equal(b, w) {
				t.Fatalf("task encodes as %s, encoding/json writes %s", b, w)
			}
		}
		for i := range got.Templates {
			b, err := appendTemplate(nil, &got.Templates[i])
			if err != nil {
				t.Fatal(err)
			}
			if w := jsonEntry(t, &got.Templates[i]); !bytes.Equal(b, w) {
				t.Fatalf("template encodes as %s, encoding/json writes %s", b, w)
			}
		}
	})
}

// schedule.json is spliced from tasks.json's encoding: it must be exactly
// the Schedule (tasks.json's content plus worker and now) encoding/json
// would write.
func TestScheduleIsTasksFilePlusWorkerAndNow(t *testing.T) {
	h := newHome(t, "w")
	p, _ := open(t, h, "w")
	mustAdd(t, p, NewTask{Text: "first <b>&</b>\nline \"two\""})
	mustAdd(t, p, NewTask{Text: "second", After: nil, Priority: 3})
	tasksData, err := os.ReadFile(p.W.TasksFile())
	if err != nil {
		t.Fatal(err)
	}
	schedData, err := os.ReadFile(p.W.Schedule())
	if err != nil {
		t.Fatal(err)
	}
	var f File
	if err := json.Unmarshal(tasksData, &f); err != nil {
		t.Fatal(err)
	}
	want := jsonEntry(t, Schedule{Format: f.Format, Version: f.Version, Worker: "w", Now: t0,
		Tasks: f.Tasks, Templates: []Template{}})
	var got bytes.Buffer
	if err := json.Compact(&got, schedData); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("schedule.json:\n got %s\nwant %s", got.Bytes(), want)
	}
	// And tasks.json is the File encoding/json would write.
	got.Reset()
	json.Compact(&got, tasksData)
	if want := jsonEntry(t, File{Format: Format, Version: 2, Tasks: f.Tasks, Templates: []Template{}}); !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("tasks.json:\n got %s\nwant %s", got.Bytes(), want)
	}
	if !strings.Contains(string(schedData), `"worker":"w"`) {
		t.Fatal("no worker in schedule.json")
	}
}

// Add keeps the tasks it does not touch encoded as read: in the writer's
// form the file is exactly what a full encode writes; in any other form
// encoding/json reads the same tasks as before plus the new one.
func TestAddKeepsOtherTasksAsReadAndTheFileEqual(t *testing.T) {
	p, _ := open(t, newHome(t, "w"), "w")
	a := mustAdd(t, p, NewTask{Text: "a <&> \"q\"\n é"})
	mustAdd(t, p, NewTask{Text: "b", After: []string{a.ID}, At: &t0})
	data, _ := os.ReadFile(p.W.TasksFile())
	f, err := DecodeFile("tasks.json", data)
	if err != nil {
		t.Fatal(err)
	}
	if want := encodeFile(f, "", time.Time{}); !bytes.Equal(data, want) {
		t.Fatalf("tasks.json after add:\n%s\nfull encode:\n%s", data, want)
	}
	if len(f.Tasks) != 2 || f.Version != 2 || !reflect.DeepEqual(f.Tasks[1].DependsOn, []string{a.ID}) {
		t.Fatalf("file = %+v", f)
	}

	// Another form (spaces, other key order, escapes): read the same.
	other := `{"version": 2, "format": 1, "templates": [], "tasks": [
	  {"text": "caf\u00e9 \"x\"", "id": "t-2026-01-01-00-00-00-aaaa", "kind": "filed", "standing": "owner",
	   "state": "pending", "created_at": "2026-01-01T01:00:00+01:00", "priority": 2, "by": "owner", "attempts": 0,
	   "settled": {"t-b": "failed", "t-a": "completed"}, "depends_on": ["t-a", "t-b"]}]}`
	os.WriteFile(p.W.TasksFile(), []byte(other), 0o600)
	before, err := DecodeFile("tasks.json", []byte(other))
	if err != nil {
		t.Fatal(err)
	}
	c := mustAdd(t, p, NewTask{Text: "c"})
	after := mustRead(t, p)
	if len(after.Tasks) != 2 || !reflect.DeepEqual(after.Tasks[0], before.Tasks[0]) || after.Tasks[1].ID != c.ID || after.Version != 3 {
		t.Fatalf("after add: %+v\nbefore: %+v", after.Tasks, before.Tasks)
	}
}
