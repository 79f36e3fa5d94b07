package repos

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func pushBody(lines ...string) []byte {
	var b bytes.Buffer
	for _, l := range lines {
		if l == "" {
			b.Write(Flush)
		} else {
			b.Write(Pkt(l))
		}
	}
	return b.Bytes()
}

func TestReadPush(t *testing.T) {
	body := pushBody(z+" "+a1+" refs/heads/x\x00report-status side-band-64k atomic push-options agent=git/2.39\n",
		a1+" "+b2+" refs/heads/y\n", "", "ci.skip\n", "")
	r := bufio.NewReader(io.MultiReader(bytes.NewReader(body), strings.NewReader("PACKrest")))
	p, err := ReadPush(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Commands) != 2 || p.Commands[0] != (Command{z, a1, "refs/heads/x"}) || !p.Commands[0].Create() ||
		p.Commands[1].Ref != "refs/heads/y" || !p.Has("atomic") || !p.Has("agent") || p.Has("quiet") ||
		len(p.Options) != 1 || p.Options[0] != "ci.skip" {
		t.Fatalf("%+v", p)
	}
	if !bytes.Equal(p.Raw, body) {
		t.Fatalf("raw %q, want %q", p.Raw, body)
	}
	rest, _ := io.ReadAll(r)
	if string(rest) != "PACKrest" {
		t.Fatalf("rest %q: the commands' reader read ahead", rest)
	}
}

func TestReadPushRefuses(t *testing.T) {
	for name, body := range map[string][]byte{
		"empty":     nil,
		"truncated": []byte("00"),
		"short":     []byte("0032" + z),
		"not hex":   []byte("zzzz"),
		"special":   []byte("0001"),
		"bad id":    pushBody("xyz "+a1+" refs/heads/x\x00\n", ""),
		"mixed ids": pushBody(z+" "+a1+"11111111111111111111111111 refs/heads/x\n", ""),
		"no ref":    pushBody(z+" "+a1+" \n", ""),
		"no flush":  pushBody(z + " " + a1 + " refs/heads/x\n"),
	} {
		if _, err := ReadPush(bufio.NewReader(bytes.NewReader(body))); !errors.Is(err, ErrPkt) {
			t.Errorf("%s: %v, want ErrPkt", name, err)
		}
	}
	if p, err := ReadPush(bufio.NewReader(bytes.NewReader(Flush))); err != nil || len(p.Commands) != 0 {
		t.Fatalf("the probe (a flush alone): %+v %v", p, err)
	}
	p, err := ReadPush(bufio.NewReader(bytes.NewReader(pushBody("push-cert\x00report-status\n", "certificate version 0.1\n"))))
	if err != nil || !p.Cert {
		t.Fatalf("push-cert: %+v %v", p, err)
	}
}

// FuzzReadPush: whatever a box sends, ReadPush returns or errs without
// panicking, never keeps more than MaxCommands, and what it read is
// framed as it was.
func FuzzReadPush(f *testing.F) {
	f.Add(pushBody(z+" "+a1+" refs/heads/x\x00report-status\n", ""))
	f.Add(pushBody(z+" "+a1+" refs/heads/x\x00push-options\n", "", "o\n", ""))
	f.Add([]byte("0000"))
	f.Add([]byte("ffff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ReadPush(bufio.NewReader(bytes.NewReader(data)))
		if err != nil {
			return
		}
		if len(p.Commands) > MaxCommands || len(p.Raw) > len(data) {
			t.Fatalf("%d commands, raw %d of %d", len(p.Commands), len(p.Raw), len(data))
		}
		for _, c := range p.Commands {
			if !isOID(c.Old) || !isOID(c.New) {
				t.Fatalf("bad ids %+v", c)
			}
		}
	})
}
