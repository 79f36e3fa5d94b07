package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// encodingJSONLine is the --json line as lib/cli.JSONLine wrote it, with
// encoding/json (linked into this test only); a byte that is not UTF-8 is
// U+FFFD as Go 1.27 writes it, not the escape earlier ones wrote.
func encodingJSONLine(t *testing.T, in lockInfo) string {
	t.Helper()
	if in.Holders == nil {
		in.Holders = []int{}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(in); err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(b.String(), `\ufffd`, "\uFFFD")
}

var jsonCases = []lockInfo{
	{Name: "store", State: "free"},
	{Name: "L", State: "shared", Holders: []int{4242, 4310}, Waiting: 2},
	{Name: "x", State: "exclusive", HeldElsewhere: true, Holders: []int{}},
	{Name: "L", State: "refused", Error: "a symlink"},
	{Name: "L", State: "refused", Error: "open /s/\"q\"\\\x00\x01\x1f\x7f\b\f\n\r\t<a>&\u2028\u2029\u00e9\xff\xe2\x80 日本"},
	{Name: "-1", State: "", Holders: []int{-1, 0, 1 << 40}, Waiting: -3},
}

// TestLockInfoJSONIsEncodingJSONs: appendJSON writes what encoding/json
// wrote for --ls --json, byte for byte.
func TestLockInfoJSONIsEncodingJSONs(t *testing.T) {
	for _, in := range jsonCases {
		if got, want := string(in.appendJSON(nil)), encodingJSONLine(t, in); got != want {
			t.Errorf("%+v:\n got %s\nwant %s", in, got, want)
		}
	}
}

// FuzzLockInfoJSON: for any strings and numbers, appendJSON and
// encoding/json agree.
func FuzzLockInfoJSON(f *testing.F) {
	for _, in := range jsonCases {
		f.Add(in.Name, in.State, in.Error, in.HeldElsewhere, in.Waiting, len(in.Holders))
	}
	f.Fuzz(func(t *testing.T, name, state, why string, elsewhere bool, waiting, holders int) {
		in := lockInfo{Name: name, State: state, Error: why, HeldElsewhere: elsewhere, Waiting: waiting}
		for i := 0; i < holders%5; i++ {
			in.Holders = append(in.Holders, waiting*i-i)
		}
		if got, want := string(in.appendJSON(nil)), encodingJSONLine(t, in); got != want {
			t.Errorf("%+v:\n got %s\nwant %s", in, got, want)
		}
	})
}
