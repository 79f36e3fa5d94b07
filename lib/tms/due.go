package tms

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/config"
)

// Derived eligibility of a live task (never stored).
const (
	StateDue         = "due"       // claimable now
	StateScheduled   = "scheduled" // scheduled_at still ahead
	StateWaiting     = "waiting"   // a dependency has not finished
	StateBlocked     = "blocked"   // a dependency failed or was canceled
	StateLate        = "late"      // proactive, and the day's budget is used up
	StateHeld        = "held"      // dispatch holds: worker paused, no credential, low disk
	StateClaimed     = Claimed
	StateNeedsReview = NeedsReview
)

// Eligibility is a task's derived state and the reason, in words.
type Eligibility struct {
	Status string `json:"eligibility"`
	Why    string `json:"why,omitempty"`
}

// eligibility derives what the task's own fields and its dependencies say
// (the partition-wide holds and the budget come on top, in Due).
func eligibility(f *File, t *Task, now time.Time, zone *time.Location) Eligibility {
	switch t.State {
	case Claimed:
		why := ""
		if t.Claim != nil {
			why = "run " + t.Claim.Run
		}
		return Eligibility{StateClaimed, why}
	case NeedsReview:
		return Eligibility{StateNeedsReview, fmt.Sprintf("%d gate(s) pending", pendingGates(t))}
	}
	var waiting, blocked []string
	for _, d := range t.DependsOn {
		if dt := f.Task(d); dt != nil {
			waiting = append(waiting, d)
			continue
		}
		switch s := t.Settled[d]; s {
		case Completed:
		case "":
			blocked = append(blocked, "unknown "+d)
		default:
			blocked = append(blocked, s+" "+d)
		}
	}
	if len(blocked) > 0 {
		return Eligibility{StateBlocked, "blocked by " + strings.Join(blocked, ", ")}
	}
	if len(waiting) > 0 {
		return Eligibility{StateWaiting, "waiting on " + strings.Join(waiting, ", ")}
	}
	if t.ScheduledAt != nil && t.ScheduledAt.After(now) {
		return Eligibility{StateScheduled, "scheduled " + t.ScheduledAt.In(zone).Format("2006-01-02 15:04 MST")}
	}
	return Eligibility{StateDue, ""}
}

// claimLess is the claim order: owner before proactive, then higher
// priority, then scheduled_at (or created_at), then id.
func claimLess(a, b *Task) bool {
	if (a.Standing == Owner) != (b.Standing == Owner) {
		return a.Standing == Owner
	}
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	ta, tb := a.CreatedAt, b.CreatedAt
	if a.ScheduledAt != nil {
		ta = *a.ScheduledAt
	}
	if b.ScheduledAt != nil {
		tb = *b.ScheduledAt
	}
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	return a.ID < b.ID
}

// Entry is one live task with its derived eligibility.
type Entry struct {
	Task
	Eligibility
}

// DueReport is what a dispatcher would claim from one partition now, and
// why not the rest.
type DueReport struct {
	Worker     string
	Version    int64
	Claimable  []Task  // pending and claimable now, in claim order
	Entries    []Entry // every live task: pending ones in claim order, then claimed, then needs-review
	Holds      []string
	Budget     Budget
	LiveClaims int
	Next       time.Time // the earliest future scheduled_at or template activation; zero if none
	// NextActivation is the earliest future template activation alone
	// (zero if none).
	NextActivation time.Time
	// CredentialHold is why the worker is held for want of a model
	// credential (ProviderHold), "" when it is not; Holds has its short
	// form.
	CredentialHold string
	// SpecHold is why the worker is held for its spec (SpecHold: no
	// command, its agent not installed, a connection's path missing), ""
	// when it is not; Holds has it.
	SpecHold string
	// StoreHold is why the worker is held for its store's size
	// (StoreHold: over store.max at the last take), "" when it is not;
	// Holds has it.
	StoreHold string
	// At is where in the journal this look stood, for ClaimsChanged.
	At Cursor
}

// Due lists the partition's live tasks with their eligibility, the
// claimable ones in claim order. Holds (worker paused, no credential, no
// credential for its model providers, low disk) make everything held; an exhausted budget makes proactive work late. It does
// not fire templates: call FireTemplates first.
func (p *Partition) Due(ctx context.Context) (*DueReport, error) {
	f, at, err := p.readNoLockAt(ctx)
	if err != nil {
		return nil, err
	}
	now := p.clock.Now()
	r := &DueReport{Worker: p.Name, Version: f.Version, At: at}
	if p.Spec != nil && p.Spec.Paused {
		r.Holds = append(r.Holds, "worker paused") // dispatch claims nothing for it
	}
	if !CredentialsPresent(p.Org, p.getenv) {
		r.Holds = append(r.Holds, "no credential")
	}
	if why := SpecHold(p.Spec); why != "" {
		r.SpecHold = why
		r.Holds = append(r.Holds, why)
	}
	if why := StoreHold(ctx, p.Home.Worker(p.Name), p.Org); why != "" {
		r.StoreHold = why
		r.Holds = append(r.Holds, why)
	}
	if why, short := ProviderHold(p.Home, p.Org, p.Spec, p.getenv, now); why != "" {
		r.CredentialHold = why
		r.Holds = append(r.Holds, short)
	}
	if low, why, err := LowDisk(p.Home, p.Org); err == nil && low {
		r.Holds = append(r.Holds, why)
	}
	r.Budget, err = p.BudgetState(now)
	if err != nil {
		return nil, err
	}
	return p.classify(r, f, now), nil
}

func (p *Partition) classify(r *DueReport, f *File, now time.Time) *DueReport {
	tasks := make([]*Task, len(f.Tasks))
	for i := range f.Tasks {
		tasks[i] = &f.Tasks[i]
	}
	rank := func(t *Task) int {
		switch t.State {
		case Pending:
			return 0
		case Claimed:
			return 1
		}
		return 2
	}
	sort.SliceStable(tasks, func(i, j int) bool {
		ri, rj := rank(tasks[i]), rank(tasks[j])
		if ri != rj {
			return ri < rj
		}
		return claimLess(tasks[i], tasks[j])
	})
	for _, t := range tasks {
		e := eligibility(f, t, now, p.Zone())
		if t.State == Claimed {
			r.LiveClaims++
		}
		if e.Status == StateDue && len(r.Holds) > 0 {
			e = Eligibility{StateHeld, "held: " + strings.Join(r.Holds, ", ")}
		}
		if e.Status == StateDue && t.Standing == Proactive && r.Budget.Over() {
			e = Eligibility{StateLate, "late (" + r.Budget.String() + ")"}
			// Paced work is due again when the oldest start leaves the hour.
			if p := r.Budget.Paced; !p.IsZero() && !r.Budget.spent() && (r.Next.IsZero() || p.Before(r.Next)) {
				r.Next = p
			}
		}
		if e.Status == StateDue {
			r.Claimable = append(r.Claimable, *t)
		}
		if t.State == Pending && t.ScheduledAt != nil && t.ScheduledAt.After(now) {
			if r.Next.IsZero() || t.ScheduledAt.Before(r.Next) {
				r.Next = *t.ScheduledAt
			}
		}
		r.Entries = append(r.Entries, Entry{Task: *t, Eligibility: e})
	}
	if n := p.nextActivation(f, now); !n.IsZero() {
		r.NextActivation = n
		if r.Next.IsZero() || n.Before(r.Next) {
			r.Next = n
		}
	}
	return r
}

// Budget is a worker's proactive box time today, and its pace of
// proactive starts.
type Budget struct {
	Used      time.Duration
	Limit     time.Duration
	Unlimited bool
	Clears    time.Time // the next host-local midnight
	// Pace is [budget] proactive_starts (0: unpaced); Starts the proactive
	// runs started in the last hour; Paced, when Starts reached Pace, the
	// time the oldest of them leaves the hour (zero: not paced).
	Pace   int
	Starts int
	Paced  time.Time
	// Model spend today against [budget] proactive_tokens and
	// proactive_usd (0: no limit): once either is reached proactive work
	// waits (late), as for box time, instead of being started only to
	// have its model calls refused.
	Tokens, TokensLimit int64
	USD, USDLimit       float64
}

// Over reports whether proactive work is late: the day's box time is
// spent, or the hour's starts.
func (b Budget) Over() bool { return b.spent() || !b.Paced.IsZero() }

func (b Budget) spent() bool {
	return (!b.Unlimited && b.Used >= b.Limit) || b.modelSpent()
}

func (b Budget) modelSpent() bool {
	return (b.TokensLimit > 0 && b.Tokens >= b.TokensLimit) || (b.USDLimit > 0 && b.USD >= b.USDLimit)
}

// String says "budget: 2h used of 2h, clears 00:00", or, when the pace
// holds proactive work, "paced: 30 proactive starts in the last hour
// (proactive_starts = 30), next at 14:05".
func (b Budget) String() string {
	if !b.spent() && !b.Paced.IsZero() {
		return fmt.Sprintf("paced: %d proactive starts in the last hour (proactive_starts = %d), next at %s", b.Starts, b.Pace, b.Paced.Format("15:04:05"))
	}
	if b.modelSpent() {
		if b.TokensLimit > 0 && b.Tokens >= b.TokensLimit {
			return fmt.Sprintf("budget: %d model tokens used of %d (proactive_tokens), clears %s", b.Tokens, b.TokensLimit, b.Clears.Format("15:04"))
		}
		return fmt.Sprintf("budget: $%.2f of models used of $%.2f (proactive_usd), clears %s", b.USD, b.USDLimit, b.Clears.Format("15:04"))
	}
	if b.Unlimited {
		return "budget: unlimited"
	}
	return fmt.Sprintf("budget: %s used of %s, clears %s", shortDur(b.Used), shortDur(b.Limit), b.Clears.Format("15:04"))
}

func shortDur(d time.Duration) string {
	d = d.Truncate(time.Minute)
	if d <= 0 {
		return "0m"
	}
	return config.FormatDuration(d)
}
