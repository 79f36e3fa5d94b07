package tms

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/agent"
	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/creds"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
	"github.com/roster-sh/roster/lib/snap"
)

// CredentialsPresent reports whether dispatch may run as far as model
// credentials go: an empty [dispatch] credentials list never holds;
// otherwise any one present entry is enough ("file:PATH": exists and is
// non-empty; "env:NAME": set and non-empty in getenv).
func CredentialsPresent(org *config.Org, getenv func(string) string) bool {
	if org == nil || len(org.Dispatch.Credentials) == 0 {
		return true
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	for _, c := range org.Dispatch.Credentials {
		switch {
		case strings.HasPrefix(c, "file:"):
			if fi, err := os.Stat(strings.TrimPrefix(c, "file:")); err == nil && fi.Mode().IsRegular() && fi.Size() > 0 {
				return true
			}
		case strings.HasPrefix(c, "env:"):
			if getenv(strings.TrimPrefix(c, "env:")) != "" {
				return true
			}
		}
	}
	return false
}

// ProviderHold says why a worker is held for want of a model credential
// (docs/gateway.md, "Dispatch hold"), or "" when it is not: its boxes get a
// gateway and none of its [gateway] providers has a credential in reach.
// Any one provider with a credential is enough (as with [dispatch]
// credentials); a worker with no provider, or whose network is "none" or
// "host", is never held for credentials. Each provider's sources are
// looked up as the run's gateway will (creds.Lookup: the vault with its
// mode rules, the host's pi login, getenv for env:, key files), fresh at
// every call; the reason names the sources, never a key. short is the
// reason in a few words, for task listings.
func ProviderHold(h home.Home, org *config.Org, spec *config.Worker, getenv func(string) string, now time.Time) (why, short string) {
	if org == nil || spec == nil || spec.Network != "gateway" || len(spec.Gateway.Providers) == 0 {
		return "", ""
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	sources := creds.Creds{VaultDir: h.Vault(), Env: func(name string) (string, bool) {
		v := getenv(name)
		return v, v != ""
	}}
	providers := creds.OrgProviders(org)
	var reasons []string
	for _, name := range spec.Gateway.Providers {
		p, ok := providers[name]
		if !ok {
			reasons = append(reasons, name+": not a provider of org.toml")
			continue
		}
		_, err := creds.Lookup(p, sources, now)
		if err == nil {
			return "", ""
		}
		reasons = append(reasons, strings.TrimSuffix(err.Error(), ": "+creds.ErrNoCredential.Error()))
	}
	return "no model credential in reach (" + strings.Join(reasons, "; ") + ")",
		"no model credential (" + strings.Join(spec.Gateway.Providers, ", ") + ")"
}

// SpecHold is why a worker's boxes cannot start as its spec stands, ""
// when they can: no command (and no agent), an agent the box would not
// see (agent.Find: not installed in the host's /usr or the spec's rootfs;
// the reason ends with its install hint), or a [[connection]] whose host
// path is missing or not a folder. Such a worker is held (its tasks stay
// pending, never claimed to fail) until the spec, the agent or the path is
// fixed; it is looked up afresh at every call.
func SpecHold(spec *config.Worker) string {
	if spec == nil {
		return ""
	}
	if len(spec.Command) == 0 && spec.Agent == "" {
		return "no command in its spec"
	}
	if spec.Agent != "" {
		a, err := agent.For(spec.Agent)
		if err == nil {
			_, err = agent.Find(a, spec.Rootfs)
		}
		if err != nil {
			if hint := errs.HintOf(err); hint != "" {
				return fmt.Sprintf("%v (hint: %s)", err, hint)
			}
			return err.Error()
		}
	}
	for _, c := range spec.Connections {
		if fi, err := os.Stat(c.Path); err != nil {
			return fmt.Sprintf("connection %s: %s is missing", c.Name, c.Path)
		} else if !fi.IsDir() {
			return fmt.Sprintf("connection %s: %s is not a folder", c.Name, c.Path)
		}
	}
	return ""
}

// LowDisk reports whether the data tree's filesystem has less free space
// than [storage] store.min_free, or fewer free inodes than one per
// config.InodeBytes of it (a filesystem that reports no inode count, as
// btrfs does, is judged by bytes alone), with the reason in words.
func LowDisk(h home.Home, org *config.Org) (bool, string, error) {
	if org == nil || org.Storage.MinFree <= 0 {
		return false, "", nil
	}
	var st unix.Statfs_t
	if err := unix.Statfs(h.Data(), &st); err != nil {
		return false, "", fmt.Errorf("statfs %s: %w", h.Data(), err)
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	if free < org.Storage.MinFree {
		return true, fmt.Sprintf("low disk (%s free, store.min_free is %s)", config.FormatSize(free), config.FormatSize(org.Storage.MinFree)), nil
	}
	if want := org.Storage.MinFree / config.InodeBytes; st.Files > 0 && int64(st.Ffree) < want {
		return true, fmt.Sprintf("low disk (%d inodes free, store.min_free %s wants %d)", st.Ffree, config.FormatSize(org.Storage.MinFree), want), nil
	}
	return false, "", nil
}

// StoreHold is why worker w is held for the size of its store, "" when it
// is not: its newest snapshot (store and channel stores, as the last take
// measured them) is over [storage] store.max in bytes, or in inodes (files,
// folders and links alike) at one per config.InodeBytes of the bound. The
// hold lasts until a take measures it under the bound again (the worker's
// operator frees space, then `roster-snap take`). No store.max, or no
// snapshot yet, never holds.
//
// A worker whose store cannot be snapshotted at all (its last take failed
// for a reason of the store's own, snap.Failed) is held the same way,
// until a take succeeds, so that its runs do not go on unrecorded; not
// while snapshots are off (store.snapshots = 0).
func StoreHold(ctx context.Context, w home.Worker, org *config.Org) string {
	if org == nil || org.Storage.Snapshots > 0 {
		if f, err := snap.Failed(ctx, w); err == nil && f != nil {
			since := ""
			if !f.Since.IsZero() {
				since = "takes failing since " + f.Since.In(org.Zone()).Format("2006-01-02 15:04:05") + ": "
			}
			return fmt.Sprintf("store cannot be snapshotted (%s%s); fix it, then `roster-snap take %s`", since, f.Error, w.Name)
		}
	}
	if org == nil || org.Storage.Max <= 0 {
		return ""
	}
	hd, err := snap.Newest(ctx, w)
	if err != nil || hd == nil {
		return ""
	}
	max := org.Storage.Max
	if hd.Bytes > max {
		return fmt.Sprintf("store over store.max (%d bytes in snapshot %s, store.max is %s)", hd.Bytes, hd.ID, config.FormatSize(max))
	}
	if inodes := max / config.InodeBytes; int64(hd.Entries) > inodes {
		return fmt.Sprintf("store over store.max (%d inodes in snapshot %s, store.max %s allows %d)", hd.Entries, hd.ID, config.FormatSize(max), inodes)
	}
	return ""
}

// localMidnight returns the midnight in zone starting now's day.
func localMidnight(now time.Time, zone *time.Location) time.Time {
	l := now.In(zone)
	return time.Date(l.Year(), l.Month(), l.Day(), 0, 0, 0, 0, zone)
}

// BudgetUsed sums the box time of w's proactive runs that started on now's
// host-local day: cost.wall_seconds of ended runs, time so far of live
// ones.
func BudgetUsed(w home.Worker, now time.Time, zone *time.Location) (time.Duration, error) {
	b := Budget{}
	err := b.measure(w, now, zone, 0)
	return b.Used, err
}

// measure fills b.Used (proactive box time of now's local day) and, with
// a pace (proactive_starts > 0), b.Starts and b.Paced (proactive runs
// started in the hour before now, and when the oldest of them leaves that
// hour) from one read of the run records of both windows.
func (b *Budget) measure(w home.Worker, now time.Time, zone *time.Location, pace int) error {
	start := localMidnight(now, zone)
	end := start.AddDate(0, 0, 1)
	hour := now.Add(-time.Hour)
	from := start
	if pace > 0 && hour.Before(from) {
		from = hour
	}
	var oldest time.Time
	err := proactiveRuns(w, from, end, func(r *runs.Record) {
		if !r.StartedAt.Before(start) {
			if r.EndedAt == nil {
				if d := now.Sub(r.StartedAt); d > 0 {
					b.Used += d
				}
			} else {
				b.Used += time.Duration(r.Cost.WallSeconds * float64(time.Second))
			}
		}
		if pace > 0 && r.StartedAt.After(hour) && !r.StartedAt.After(now) {
			b.Starts++
			if oldest.IsZero() || r.StartedAt.Before(oldest) {
				oldest = r.StartedAt
			}
		}
	})
	if pace > 0 {
		b.Pace = pace
		if b.Starts >= pace {
			b.Paced = oldest.Add(time.Hour).In(zone)
		}
	}
	return err
}

// proactiveRuns calls fn with the record of each of w's proactive runs
// that started in [from, to). Run folders are named by their (UTC) start,
// so older ones are skipped unread; unreadable records are skipped.
func proactiveRuns(w home.Worker, from, to time.Time, fn func(r *runs.Record)) error {
	ids, err := runs.IDs(w)
	if err != nil {
		return err
	}
	for _, id := range ids {
		rt, err := home.RunTime(id)
		if err != nil || rt.Before(from.Add(-time.Hour)) || !rt.Before(to) {
			continue
		}
		r, err := runs.ReadRecord(w.Run(id))
		if err != nil || r.Standing != Proactive || r.StartedAt.Before(from) || !r.StartedAt.Before(to) {
			continue
		}
		fn(r)
	}
	return nil
}

// BudgetState is the partition's proactive budget at now.
func (p *Partition) BudgetState(now time.Time) (Budget, error) {
	b := Budget{Limit: p.Org.Budget.Proactive, Unlimited: p.Org.Budget.Unlimited, Clears: localMidnight(now, p.Zone()).AddDate(0, 0, 1).In(p.Zone()),
		TokensLimit: p.Org.Budget.Tokens, USDLimit: p.Org.Budget.USD}
	if b.TokensLimit > 0 || b.USDLimit > 0 {
		var err error
		if b.Tokens, b.USD, err = runs.SpentToday(p.Home, p.Name, now, p.Zone()); err != nil {
			return b, err
		}
	}
	if b.Unlimited && p.Org.Budget.Starts == 0 {
		return b, nil
	}
	err := b.measure(p.W, now, p.Zone(), p.Org.Budget.Starts)
	return b, err
}
