package snap

import (
	"bytes"
	"strings"
	"testing"
)

func FuzzParseEntry(f *testing.F) {
	f.Add([]byte(`{"path":"store/a","type":"f","mode":"0644","uid":0,"gid":0,"size":3,"mtime":1,"ino":2,"ctime":3}`))
	f.Add([]byte(`{"path_b64":"c3RvcmUv/w==","type":"l","mode":"0777","uid":1,"gid":2,"size":0,"mtime":-1,"ino":0,"ctime":0,"target":"\u2028x","hl":3,"unstable":true}`))
	f.Add([]byte(`{"path":"a\nb","type":"d"}`))
	f.Add([]byte(`{"path":"x","type":"f","extra":null,"more":[1]}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"path":"\ud800","type":"f"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := ParseEntry(line)
		if err != nil {
			return
		}
		again, err := ParseEntry(AppendEntry(nil, &e))
		if err != nil {
			t.Fatalf("re-parse of %q: %v", AppendEntry(nil, &e), err)
		}
		if again != e {
			t.Fatalf("round trip: %+v != %+v", again, e)
		}
		if bytes.IndexByte(AppendEntry(nil, &e), '\n') >= 0 {
			t.Fatal("encoded entry holds a newline")
		}
	})
}

func FuzzEscapeName(f *testing.F) {
	for _, s := range []string{"plain", "new\nline", `back\#123`, `\#12`, "\xff\x00\x7f\t", `\\#001`, "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e := EscapeName(s)
		if strings.ContainsAny(e, "\n\r\x00") {
			t.Fatalf("escaped %q holds a line break: %q", s, e)
		}
		for i := 0; i < len(e); i++ {
			if c := e[i]; (c < 0x20 && c != '\t') || c >= 0x7f {
				t.Fatalf("escaped %q holds byte %#x", s, c)
			}
		}
		if back := UnescapeName(e); back != s {
			t.Fatalf("unescape(escape(%q)) = %q", s, back)
		}
		c := Change{Op: OpNew, Path: s, Type: TypeSymlink, Itemize: "cL+++++++++", Target: s}
		if strings.Contains(c.Line(), "\n") {
			t.Fatal("a change line holds a newline")
		}
	})
}

func TestManifestRoundTrip(t *testing.T) {
	m := &Manifest{Header: Header{Format: 1, ID: "20260719-104432.512", Entries: 3}, Entries: []Entry{
		{Path: "store", Type: TypeDir, Mode: 0o755},
		{Path: "store/\xff\n", Type: TypeFile, Mode: 0o4755, UID: 200001, GID: 7, Size: 9, Mtime: -5, Ino: 1 << 60, Ctime: 8, Group: 2, Unstable: true},
		{Path: "store/l", Type: TypeSymlink, Mode: 0o777, Target: "../\"q\"\x01"},
	}}
	got, err := ParseManifest(m.Encode())
	if err != nil {
		t.Fatal(err)
	}
	for i := range m.Entries {
		if got.Entries[i] != m.Entries[i] {
			t.Errorf("entry %d: %+v != %+v", i, got.Entries[i], m.Entries[i])
		}
	}
	bad := bytes.Replace(m.Encode(), []byte(`"format":1`), []byte(`"format":2`), 1)
	if _, err := ParseManifest(bad); err == nil || !strings.Contains(err.Error(), "unknown format 2") {
		t.Errorf("format 2 accepted: %v", err)
	}
	torn := m.Encode()
	if _, err := ParseManifest(torn[:len(torn)-3]); err == nil {
		t.Error("torn manifest accepted")
	}
}

// WriteTo streams exactly the bytes Encode gives, across its pieces.
func TestManifestWriteToMatchesEncode(t *testing.T) {
	m := &Manifest{Header: Header{Format: 1, ID: "20260719-104432.512"}}
	for i := 0; i < 3000; i++ {
		m.Entries = append(m.Entries, Entry{Path: "store/d/" + strings.Repeat("n", i%50) + "\xff", Type: TypeFile, Mode: 0o644, Size: int64(i), Ino: uint64(i)})
	}
	m.Header.Entries = len(m.Entries)
	var buf bytes.Buffer
	if _, err := m.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if want := m.Encode(); len(want) < 2*(64<<10) || !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("WriteTo gave %d bytes, Encode %d (or the test manifest is too small)", buf.Len(), len(want))
	}
}

func TestEscapeNameLikeRsync(t *testing.T) {
	for in, want := range map[string]string{
		"new\nline":  `new\#012line`,
		`back\#123x`: `back\#134#123x`,
		"\xc3\xa9":   `\#303\#251`,
		"t\tab":      "t\tab",
		"del\x7f":    `del\#177`,
		`a\b`:        `a\b`,
	} {
		if got := EscapeName(in); got != want {
			t.Errorf("EscapeName(%q) = %q, want %q", in, got, want)
		}
	}
}
