package config

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// Localtime is the file the system zone is read from. Never the process's
// TZ: a cron spec, a host-local day and a listed time must mean the same
// instant to the dispatcher under systemd and to `template next` in any
// shell (docs/tasks.md, "Host-local time").
var Localtime = "/etc/localtime"

// Zone is the host zone: org.toml's [dispatch] zone if set, else the
// system zone. A zero Org (no org.toml read) has the system zone.
func (o *Org) Zone() *time.Location {
	if o != nil && o.Dispatch.Zone != nil {
		return o.Dispatch.Zone
	}
	return SystemZone()
}

var systemZone = sync.OnceValue(func() *time.Location { return readSystemZone(Localtime) })

// SystemZone is the zone /etc/localtime holds, named as its link target
// names it (…/zoneinfo/Europe/Berlin is "Europe/Berlin"), or as
// /etc/timezone does for a copied file; UTC when there is none, as glibc
// takes it. It is read once per process.
func SystemZone() *time.Location { return systemZone() }

func readSystemZone(path string) *time.Location {
	data, err := os.ReadFile(path)
	if err != nil || len(data) == 0 {
		return time.UTC // none (or unreadable): UTC, as glibc takes it
	}
	name := ""
	if target, lerr := os.Readlink(path); lerr == nil {
		if i := strings.LastIndex(target, "zoneinfo/"); i >= 0 && i+len("zoneinfo/") < len(target) {
			name = target[i+len("zoneinfo/"):]
		}
	}
	if name == "" {
		if tz, terr := os.ReadFile("/etc/timezone"); terr == nil && path == "/etc/localtime" {
			name = strings.TrimSpace(string(tz))
		}
	}
	if name == "" {
		name = "localtime"
	}
	loc, err := time.LoadLocationFromTZData(name, data)
	if err != nil {
		return time.UTC
	}
	return loc
}

// loadZone reads org.toml's [dispatch] zone: an IANA name ("Europe/Berlin",
// "UTC"); "" means the system zone (nil).
func loadZone(name string) (*time.Location, error) {
	if name == "" {
		return nil, nil
	}
	if name == "Local" || strings.HasPrefix(name, "/") || strings.Contains(name, "..") {
		return nil, errors.New("want an IANA zone name such as \"Europe/Berlin\" or \"UTC\"")
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown zone %q (want an IANA name such as \"Europe/Berlin\")", name)
	}
	return loc, nil
}
