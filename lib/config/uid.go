package config

// Two workers never share a box user: the uid checks across specs, and
// the data/uids/ links that make them cheap.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/pelletier/go-toml/v2"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
)

// SharedUID is the refusal of worker name's spec, whose uid is also
// worker other's.
func SharedUID(h home.Home, name string, uid int, other string) error {
	return errs.WithHint(errs.New(errs.ErrRefused, fmt.Sprintf(
		"%s: uid %d is also worker %s's (%s): two workers never share a box user", h.SpecFile(name), uid, other, h.SpecFile(other))),
		"give one of them a uid of its own (`roster worker add` picks a free one); both are set aside until then")
}

// SpecUID is the uid a spec's text names, read leniently: a spec that does
// not parse still holds its uid against the others (uidSharedWith).
func SpecUID(data []byte) (int, bool) {
	var f struct {
		UID *int `toml:"uid"`
	}
	if toml.Unmarshal(data, &f) != nil || f.UID == nil {
		return 0, false
	}
	return *f.UID, true
}

// LoadWorkers is LoadWorker for each of names, each spec read once.
// errs[i] is names[i]'s refusal. When data/uids/ links every named
// worker's uid to it (as `roster worker add` leaves them), that is the uid
// check, as in LoadWorker; otherwise the uids are checked against every
// spec of h at once, read once (a sweep of 16 workers in a home of 10,000
// reads 16 specs, not 10,000).
func LoadWorkers(h home.Home, names []string) ([]*Worker, []error) {
	reads := readWorkers(h, names)
	linked := true
	for i, n := range names {
		if r := reads[i]; r.err == nil && !uidLinked(h, r.uid, n) {
			linked = false
			break
		}
	}
	var uids map[int][]string
	if !linked {
		uids = allUIDs(h, names, reads)
	}
	ws, es := make([]*Worker, len(names)), make([]error, len(names))
	for i, n := range names {
		r := reads[i]
		if r.err != nil {
			es[i] = r.err
			continue
		}
		if other := OtherWithUID(uids[r.w.UID], n); other != "" {
			es[i] = SharedUID(h, n, r.w.UID, other)
			continue
		}
		ws[i] = r.w
	}
	return ws, es
}

// specRead is one spec as LoadWorkers read it: the worker (nil on err)
// and the uid its text names, if any, read leniently.
type specRead struct {
	w   *Worker
	uid int
	has bool
	err error
}

// readWorkers reads each of names' specs, a few at once.
func readWorkers(h home.Home, names []string) []specRead {
	reads := make([]specRead, len(names))
	fsx.Each(len(names), func(i int) {
		r := &reads[i]
		r.w, r.uid, r.has, r.err = ReadWorkerUID(h, names[i])
	})
	return reads
}

// uidLinked tells whether data/uids/UID names worker name.
func uidLinked(h home.Home, uid int, name string) bool {
	t, err := os.Readlink(filepath.Join(h.Data(), "uids", strconv.Itoa(uid)))
	return err == nil && t == name
}

// allUIDs maps each uid named by a spec of h to its workers (sorted, as
// ListWorkers is), reusing the reads already made of names.
func allUIDs(h home.Home, names []string, reads []specRead) map[int][]string {
	done := make(map[string]specRead, len(names))
	for i, n := range names {
		done[n] = reads[i]
	}
	all, err := ListWorkers(h)
	if err != nil {
		all = nil
	}
	var rest []string
	for _, n := range all {
		if _, ok := done[n]; !ok {
			rest = append(rest, n)
		}
	}
	for i, r := range readWorkers(h, rest) {
		done[rest[i]] = r
	}
	uids := map[int][]string{}
	for _, n := range all {
		if r := done[n]; r.has {
			uids[r.uid] = append(uids[r.uid], n)
		}
	}
	return uids
}

// OtherWithUID is the first of names (the workers with one uid, sorted)
// that is not name, or "".
func OtherWithUID(names []string, name string) string {
	for _, n := range names {
		if n != name {
			return n
		}
	}
	return ""
}

// uidSharedWith names another worker of h whose spec has uid, or "". A
// spec that cannot be read is skipped here (it is refused on its own).
//
// Finding that out reads every other spec, which would make every
// partition command and every box start cost the home's size. So a check
// that found name alone with uid records that in data/uids/UID (a
// symlink to the name: a derived cache, safe to delete), and a later load
// of name with that uid takes the link as the answer. Only the link's
// owner skips the reading: any other worker whose spec is given the same
// uid reads every spec, finds the owner, is refused, and removes the
// link, so the owner's next load reads again and is refused too; two
// workers can therefore never both start boxes as one box user. (The
// dispatcher checks every spec against every other in its own index.)
func uidSharedWith(h home.Home, name string, uid int) string {
	link := filepath.Join(h.Data(), "uids", strconv.Itoa(uid))
	if t, err := os.Readlink(link); err == nil && t == name {
		return ""
	}
	other := scanUID(h, name, uid)
	if other != "" {
		if t, err := os.Readlink(link); err == nil && t != "" {
			_ = os.Remove(link)
		}
		return other
	}
	recordUID(link, name)
	return ""
}

// scanUID reads every other spec of h for uid.
func scanUID(h home.Home, name string, uid int) string {
	names, err := ListWorkers(h)
	if err != nil {
		return ""
	}
	for _, n := range names {
		if n == name {
			continue
		}
		data, err := os.ReadFile(h.SpecFile(n))
		if err != nil {
			continue
		}
		if u, ok := SpecUID(data); ok && u == uid {
			return n
		}
	}
	return ""
}

// recordUID points link at name, atomically (a symlink renamed into
// place), best effort: a home whose data folder this process cannot write
// only reads the specs every time.
func recordUID(link, name string) {
	dir := filepath.Dir(link)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return
	}
	tmp := fmt.Sprintf("%s.%d.tmp", link, os.Getpid())
	_ = os.Remove(tmp)
	if err := os.Symlink(name, tmp); err != nil {
		return
	}
	if err := os.Rename(tmp, link); err != nil {
		_ = os.Remove(tmp)
	}
}
