package main

import (
	"os"
	"strings"
	"time"
)

// zoneName names the zone loc reads times in, for people: a named zone
// (CRON_TZ=Zone) as it is; the host's local zone as TZ names it (TZ=""
// is UTC), else as the target of the /etc/localtime link names it
// (…/zoneinfo/Europe/Berlin), else "host local time".
func zoneName(loc *time.Location, getenv func(string) (string, bool), localtime string) string {
	if loc != time.Local {
		return loc.String()
	}
	if tz, ok := getenv("TZ"); ok {
		tz = strings.TrimPrefix(tz, ":")
		if tz == "" {
			return "UTC"
		}
		if i := strings.LastIndex(tz, "zoneinfo/"); i >= 0 && strings.HasPrefix(tz, "/") {
			return tz[i+len("zoneinfo/"):]
		}
		return tz
	}
	if target, err := os.Readlink(localtime); err == nil {
		if i := strings.LastIndex(target, "zoneinfo/"); i >= 0 && i+len("zoneinfo/") < len(target) {
			return target[i+len("zoneinfo/"):]
		}
	}
	return "host local time"
}
