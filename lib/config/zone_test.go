package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSystemZoneIsLocaltimeNotTZ(t *testing.T) {
	if _, err := time.LoadLocation("America/New_York"); err != nil {
		t.Skip("no zoneinfo:", err)
	}
	t.Setenv("TZ", "Asia/Tokyo")
	dir := t.TempDir()
	link := filepath.Join(dir, "localtime")
	if err := os.Symlink("/usr/share/zoneinfo/America/New_York", link); err != nil {
		t.Fatal(err)
	}
	loc := readSystemZone(link)
	if loc.String() != "America/New_York" {
		t.Errorf("linked: %q", loc)
	}
	if _, off := time.Date(2026, 1, 1, 0, 0, 0, 0, loc).Zone(); off != -5*3600 {
		t.Errorf("linked: offset %d", off)
	}
	data, _ := os.ReadFile("/usr/share/zoneinfo/Europe/Berlin")
	copied := filepath.Join(dir, "copied")
	os.WriteFile(copied, data, 0o644)
	if _, off := time.Date(2026, 1, 1, 0, 0, 0, 0, readSystemZone(copied)).Zone(); off != 3600 {
		t.Errorf("copied: offset %d", off)
	}
	if readSystemZone(filepath.Join(dir, "missing")) != time.UTC {
		t.Error("no localtime is not UTC")
	}
}

func TestOrgZone(t *testing.T) {
	o, err := ParseOrg("org.toml", []byte("[dispatch]\nzone = \"Europe/Berlin\"\n"))
	if err != nil {
		t.Skip("no zoneinfo:", err)
	}
	if o.Zone().String() != "Europe/Berlin" {
		t.Errorf("zone %v", o.Zone())
	}
	if o, _ := ParseOrg("org.toml", nil); o.Zone() != SystemZone() {
		t.Error("no zone set is not the system zone")
	}
	if (*Org)(nil).Zone() != SystemZone() {
		t.Error("nil org")
	}
	for _, bad := range []string{"Mars/Olympus", "Local", "/etc/localtime", "../../etc/passwd"} {
		_, err := ParseOrg("org.toml", []byte("[dispatch]\nzone = \""+bad+"\"\n"))
		if err == nil || !strings.Contains(err.Error(), "org.toml:2: dispatch.zone") {
			t.Errorf("zone %q: %v", bad, err)
		}
	}
}
