package config

import (
	"errors"
	"testing"

	"github.com/roster-sh/roster/lib/errs"
)

// Every parser of a file people write: any input either parses or is a
// refusal (exit 14); it never panics or yields another kind of error.
func FuzzParseOrg(f *testing.F) {
	f.Add([]byte(fullOrg))
	f.Add([]byte(DefaultOrgTOML))
	f.Add([]byte("[storage]\nstore.min_free = 12\n"))
	f.Add([]byte("[dispatch]\ncredentials = [\"env:X\"]\n"))
	f.Add([]byte("[budget]\nproactive = \"off\"\n[[x]]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := ParseOrg("org.toml", data)
		if err != nil {
			if !errors.Is(err, errs.ErrRefused) && !errors.Is(err, errs.ErrUsage) {
				t.Fatalf("not a refusal: %v", err)
			}
			return
		}
		if o.Dispatch.Cap < 1 || o.Dispatch.Poll <= 0 || o.Storage.RunsKeep < 1 || o.Storage.Snapshots < 0 || o.Storage.MinFree < 0 {
			t.Fatalf("accepted an invalid org: %+v", o)
		}
		for _, k := range []string{"filed", "recurring", "heartbeat", "relay", "continuation", "adhoc"} {
			if o.Ceiling(k) <= 0 {
				t.Fatalf("ceiling %s = %v", k, o.Ceiling(k))
			}
		}
	})
}

func FuzzParseWorker(f *testing.F) {
	f.Add([]byte(fullWorker))
	f.Add([]byte("uid = 7\n"))
	f.Add([]byte("uid = 7\npaused = false\n[[connection]]\nname = \"a\"\npath = \"/a\"\nat = \"a\"\nmode = \"rw\"\n"))
	if data, err := RenderWorker(NewWorker{Name: "d", UID: 200000, Command: []string{"/bin/x"}}); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := ParseWorker("d", "d.toml", data)
		if err != nil {
			if !errors.Is(err, errs.ErrRefused) && !errors.Is(err, errs.ErrUsage) {
				t.Fatalf("not a refusal: %v", err)
			}
			return
		}
		if w.UID < 1 || w.Concurrency < 1 || w.Pids < 1 || !(w.CPUs > 0) || w.Memory < 1<<20 ||
			(w.Network != "gateway" && w.Network != "none" && w.Network != "host") ||
			(w.Agent != "" && len(w.Command) > 0) {
			t.Fatalf("accepted an invalid worker: %+v", w)
		}
		for _, c := range w.Connections {
			if c.At == ".." || c.At == "store" || c.At == "self" || c.At == "channel" || (c.Mode != "ro" && c.Mode != "rw") {
				t.Fatalf("accepted an invalid connection: %+v", c)
			}
		}
		// pause and resume always work on a spec that parses, and change nothing else
		for _, p := range []bool{true, false} {
			out := setTopLevelBool(data, "paused", p)
			w2, err := ParseWorker("d", "d.toml", out)
			if err != nil {
				t.Fatalf("set paused=%v broke the spec: %v\n%q", p, err, out)
			}
			if w2.Paused != p || w2.UID != w.UID || w2.Role != w.Role || len(w2.Connections) != len(w.Connections) {
				t.Fatalf("set paused=%v changed more: %+v -> %+v", p, w, w2)
			}
		}
	})
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"2G", "512MiB", "0", "1k", "9223372036854775807", "8388607T", "1 T"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("ParseSize(%q) = %d", s, n)
		}
		back, err := ParseSize(FormatSize(n))
		if err != nil || back != n {
			t.Fatalf("FormatSize round trip of %d: %q -> %d, %v", n, FormatSize(n), back, err)
		}
	})
}
