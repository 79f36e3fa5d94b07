package creds

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// FuzzPiAuth: pi's auth.json is another program's file. Whatever it
// holds, a lookup through it never panics, and what it serves is a key
// that can be a header value: not empty, no control byte or line break.
func FuzzPiAuth(f *testing.F) {
	f.Add([]byte(`{"anthropic":{"type":"api_key","key":"sk-ant-x"}}`))
	f.Add([]byte(fmt.Sprintf(`{"anthropic":{"type":"oauth","access":"sk-ant-oat01-a","refresh":"r","expires":%d}}`, testNow.Add(1e12).UnixMilli())))
	f.Add([]byte(`{"anthropic":{"type":"api_key","key":"!cat /etc/shadow"}}`))
	f.Add([]byte(`{"anthropic":{"type":"api_key","key":"K\n"}}`))
	f.Add([]byte(`{"anthropic":7}`))
	f.Add([]byte(`{"anthropic":`))
	dir := f.TempDir()
	c := Creds{PiDir: dir, Env: envMap(map[string]string{"K": "sk-from-env\r\n"})}
	p := BuiltinProviders()["anthropic"]
	p.Credentials = []string{"pi"}
	f.Fuzz(func(t *testing.T, data []byte) {
		// Written anew each time, so it has not settled: it is read and
		// parsed, never served from piFiles.
		path := filepath.Join(dir, "auth.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		a := parsePiAuth(data)
		if a.parsed != (a.entries != nil) {
			t.Fatalf("parsed %v with entries %v", a.parsed, a.entries)
		}
		cr, err := Lookup(p, c, testNow)
		if err != nil {
			return
		}
		if cr.Value == "" || checkKey(cr.Value) != nil || cr.Source != "pi" {
			t.Fatalf("served %q from %q (%+v)", cr.Value, cr.Source, cr)
		}
	})
}
