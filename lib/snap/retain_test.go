package snap

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/home"
)

// The rotation keeps the newest keep counted snapshots and the newest of
// each of the last Daily local days that have one, in the zone given:
// days are the zone's, not UTC's, and days without a snapshot are not
// counted (restic's and borg's --keep-daily).
func TestRetainNewestAndDaily(t *testing.T) {
	zone := time.FixedZone("UTC-5", -5*3600)
	at := func(s string) string {
		tm, err := time.ParseInLocation("2006-01-02 15:04", s, zone)
		if err != nil {
			t.Fatal(err)
		}
		return home.NewSnapshotID(tm)
	}
	ids := []string{
		at("2026-11-20 10:00"), // 0: a quiet week before
		at("2026-11-27 09:00"), // 1
		at("2026-11-27 21:00"), // 2: 02:00 UTC on the 28th, still the 27th here: newest of the 27th
		at("2026-11-28 08:00"), // 3
		at("2026-11-28 23:30"), // 4: newest of the 28th
		at("2026-11-29 10:00"), // 5
		at("2026-11-29 10:01"), // 6
		at("2026-11-29 10:02"), // 7
	}
	labels := make([]string, len(ids))
	none := map[string]bool{}
	cases := []struct {
		keep, daily int
		want        string // per id: n newest, d daily, b both, - victim
	}{
		{2, 0, "------nn"},
		{2, 3, "--d-d-nb"},
		{2, 4, "d-d-d-nb"}, // the 20th is the 4th day with a snapshot
		{0, 0, "-------n"}, // the newest is never pruned
		{0, 2, "----d--b"},
		{8, 7, "bnbnbnnb"},
	}
	for _, c := range cases {
		opt := &Options{Daily: c.daily, Zone: zone}
		var got strings.Builder
		for _, why := range retain(ids, labels, none, c.keep, opt) {
			got.WriteByte(map[int]byte{0: '-', keptNewest: 'n', keptDaily: 'd', keptNewest | keptDaily: 'b'}[why])
		}
		if got.String() != c.want {
			t.Errorf("keep %d daily %d: %s, want %s", c.keep, c.daily, got.String(), c.want)
		}
	}
	// Pinned and undo snapshots are neither counted nor take a day.
	labels[7] = LabelPreRestore // newer than every ordinary one: kept
	pinned := map[string]bool{ids[4]: true}
	opt := &Options{Daily: 2, Zone: zone, UndoDays: 1, Now: func() time.Time { return time.Date(2026, 12, 30, 0, 0, 0, 0, time.UTC) }}
	why := retain(ids, labels, pinned, 1, opt)
	if why[7] != keptUndo || why[4] != keptPinned || why[6] != keptNewest|keptDaily || why[3] != keptDaily || why[5] != 0 {
		t.Errorf("with a pin and an undo: %v", why)
	}
}

// The attack (issue 17): sixteen quick runs used to rotate away every good
// snapshot within seconds. With store.daily, yesterday's newest snapshot
// outlives any burst today, `ls` marks it daily, and it can be restored.
// Without (Daily 0, the old rule) the same burst rotates it away.
func TestBurstKeepsYesterdaysSnapshot(t *testing.T) {
	needRoot(t)
	for _, daily := range []int{0, 7} {
		t.Run(fmt.Sprintf("daily=%d", daily), func(t *testing.T) {
			w := newWorker(t, t.TempDir())
			clock := time.Date(2026, 11, 28, 18, 0, 0, 0, time.UTC)
			o := Options{Keep: 14, Daily: daily, Zone: time.UTC, Wait: 2 * time.Second, Now: func() time.Time {
				clock = clock.Add(time.Millisecond)
				return clock
			}}
			write(t, filepath.Join(w.Store(), "notes.md"), "good", 0o644)
			good := take(t, w, o).ID
			clock = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC) // the next day
			for i := 0; i < 16; i++ {
				write(t, filepath.Join(w.Store(), "notes.md"), fmt.Sprintf("wiped %d", i), 0o644)
				take(t, w, o)
			}
			ids, err := IDs(w)
			if err != nil {
				t.Fatal(err)
			}
			kept := len(ids) > 0 && ids[0] == good
			if daily == 0 {
				if kept || len(ids) != 14 {
					t.Fatalf("without store.daily: %d snapshots, the good one kept: %v", len(ids), kept)
				}
				return
			}
			if !kept || len(ids) != 15 {
				t.Fatalf("good snapshot %s gone after the burst: %v", good, ids)
			}
			infos, err := List(context.Background(), w, o)
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range infos {
				if in.Daily != (in.ID == good) {
					t.Errorf("%s: daily %v", in.ID, in.Daily)
				}
			}
			if _, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: good}); err != nil {
				t.Fatal(err)
			}
			if got := string(mustRead(t, filepath.Join(w.Store(), "notes.md"))); got != "good" {
				t.Fatalf("restored %q", got)
			}
		})
	}
}
