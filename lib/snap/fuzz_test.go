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
	f.Add([]byte(`{"path":"x","type":"f","size":-9223372036854775808,"ino":18446744073709551615,"uid":4294967295,"mtime":9223372036854775807}`))
	f.Add([]byte(`{"path":"x","type":"f","size":9223372036854775808}`))
	f.Add([]byte(`{"path":"x","type":"f","uid":4294967296}`))
	f.Add([]byte(`{"path":"x","type":"f","size":+5,"mtime":-}`))
	f.Add([]byte(`{"path":"store/r","type":"f","mode":"0600","uid":5,"gid":5,"size":9,"mtime":7,"ino":11,"ctime":12,"sino":18446744073709551615}`))
	f.Add([]byte(`{"path":"store/r","type":"f","sino":-1}`))
	f.Add([]byte(`{"path":"store/d/d","type":"u","mode":"0755","uid":1,"gid":1,"size":4096,"mtime":5,"ino":6,"ctime":7,"skip":"nested deeper than 1000 folders"}`))
	f.Add([]byte(`{"path":"store/l","type":"u","skip_b64":"/w=="}`))
	f.Add([]byte(`{"path":"store/x","type":"f","skip":"ignored off type u"}`))
	f.Add([]byte(`{"path":"store/y","type":"u"}`))
	f.Add([]byte(`{"path":"store/é","type":"l","mode":"0777","uid":1,"gid":2,"size":3,"mtime":-9223372036854775808,"ino":18446744073709551615,"ctime":9223372036854775807,"target":"../x","hl":1099511627776,"unstable":true,"sino":7}`))
	f.Add([]byte(`{"path":"store/u","type":"u","mode":"0755","uid":0,"gid":0,"size":0,"mtime":0,"ino":0,"ctime":0}`))
	f.Add([]byte(`{"path":"store/f","type":"f","mode":"07777","uid":4294967295,"gid":0,"size":00,"mtime":-0,"ino":1,"ctime":1,"hl":0}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		// The fast path for the lines AppendEntry writes gives exactly
		// what the general parser gives, or leaves the line to it.
		if fast, ok := parseCanonical(line); ok {
			slow, err := parseEntryJSON(line)
			if err != nil {
				t.Fatalf("parseCanonical took %q, the general parser refuses it: %v", line, err)
			}
			if fast != slow {
				t.Fatalf("parseCanonical(%q) = %+v, the general parser %+v", line, fast, slow)
			}
		}
		e, err := ParseEntry(line)
		if err != nil {
			return
		}
		if _, ok := parseCanonical(AppendEntry(nil, &e)); !ok && canonicalText(e.Path) && canonicalText(e.Target) && canonicalText(e.Skip) {
			t.Fatalf("parseCanonical leaves %q, as AppendEntry wrote it, to the general parser", AppendEntry(nil, &e))
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

// canonicalText reports whether AppendEntry writes s as a plain string
// (no escapes), which parseCanonical reads.
func canonicalText(s string) bool {
	q := appendBytesField(nil, "k", s)
	return !bytes.Contains(q, []byte(`\`)) && !bytes.Contains(q, []byte("_b64"))
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

// The integer fields take exactly the range of their type, and only
// plain decimal digits (with '-' for the signed ones).
func TestParseEntryNumberRanges(t *testing.T) {
	ok := `{"path":"x","type":"f","size":-9223372036854775808,"mtime":9223372036854775807,"ino":18446744073709551615,"uid":4294967295,"gid":0,"ctime":-1}`
	e, err := ParseEntry([]byte(ok))
	if err != nil || e.Size != -1<<63 || e.Mtime != 1<<63-1 || e.Ino != 1<<64-1 || e.UID != 1<<32-1 || e.Ctime != -1 {
		t.Fatalf("%+v %v", e, err)
	}
	for _, bad := range []string{`"size":9223372036854775808`, `"size":-9223372036854775809`, `"ino":18446744073709551616`,
		`"uid":4294967296`, `"gid":-1`, `"size":-`, `"mtime":1e3`, `"ctime":1.0`, `"size":0x1`} {
		if _, err := ParseEntry([]byte(`{"path":"x","type":"f",` + bad + `}`)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
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

// BenchmarkParseManifest parses a manifest of 100,000 files (the size of
// bench/snap.sh's store), the first step of every take and restore.
func BenchmarkParseManifest(b *testing.B) {
	m := &Manifest{Header: Header{Format: 1, ID: "20260719-104432.512"}}
	for i := 0; i < 100000; i++ {
		m.Entries = append(m.Entries, Entry{Path: "store/d0" + strings.Repeat("7", 3) + "/f0" + strings.Repeat("1", 5), Type: TypeFile,
			Mode: 0o644, Size: 4096, Mtime: 1795988209566958796, Ino: 12345678, Ctime: 1795988209566958796})
	}
	m.Header.Entries = len(m.Entries)
	data := m.Encode()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseManifest(data); err != nil {
			b.Fatal(err)
		}
	}
}
