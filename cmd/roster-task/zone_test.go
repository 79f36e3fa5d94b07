package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestTemplateNextNamesTheRealZone: the note of `template next` names the
// zone by its real name, never Go's "Local".
func TestTemplateNextNamesTheRealZone(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "localtime")
	if err := os.Symlink("/usr/share/zoneinfo/America/New_York", link); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, []byte("TZif"), 0o644)
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no zoneinfo:", err)
	}
	env := func(tz string, set bool) func(string) (string, bool) {
		return func(string) (string, bool) { return tz, set }
	}
	for _, c := range []struct {
		loc       *time.Location
		getenv    func(string) (string, bool)
		localtime string
		want      string
	}{
		{berlin, env("Asia/Tokyo", true), link, "Europe/Berlin"}, // CRON_TZ wins
		{time.Local, env("Asia/Tokyo", true), link, "Asia/Tokyo"},
		{time.Local, env(":Asia/Tokyo", true), link, "Asia/Tokyo"},
		{time.Local, env("/usr/share/zoneinfo/Asia/Tokyo", true), link, "Asia/Tokyo"},
		{time.Local, env("", true), link, "UTC"},
		{time.Local, env("", false), link, "America/New_York"},
		{time.Local, env("", false), plain, "host local time"},
		{time.Local, env("", false), filepath.Join(dir, "missing"), "host local time"},
	} {
		if got := zoneName(c.loc, c.getenv, c.localtime); got != c.want {
			t.Errorf("zoneName(%v, TZ, %s) = %q, want %q", c.loc, filepath.Base(c.localtime), got, c.want)
		}
	}
}
