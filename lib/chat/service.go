package chat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/tms"
)

// MaxPendingRelays bounds the relays of one conversation waiting to be
// claimed: a message that arrives while this many wait is logged (durable,
// acknowledged) and filed when one is claimed, so a flood fills the log,
// not the task list.
const MaxPendingRelays = 8

// Service is roster-chat's work between the adapters and the data tree:
// intake (log, then acknowledge, then file) and delivery (the outboxes).
// It holds no truth of its own: the records are the truth, rebuilt from
// at start.
type Service struct {
	Home     home.Home
	Adapters map[string]Adapter // by account
	Log      *slog.Logger
	// RoutesEvery is how often the worker specs are read again (default 2 s).
	RoutesEvery time.Duration

	mu       sync.Mutex
	routes   []route
	routesAt time.Time
	seen     map[string]map[string]bool // record dir → net ids logged
	unfiled  map[string]*pendingRec     // record dir → received lines to file
	dropped  map[string]time.Time       // record dir + sender → last dropped line
	kickF    chan struct{}
	kickS    chan struct{}
}

// route is one worker's [[channel]] on one account.
type route struct {
	worker string
	ch     config.Channel
}

type pendingRec struct {
	rec   *Record
	lines []Line // received, not yet filed, oldest first
}

func (s *Service) init() {
	if s.Log == nil {
		s.Log = slog.Default()
	}
	if s.RoutesEvery == 0 {
		s.RoutesEvery = 2 * time.Second
	}
	s.seen = map[string]map[string]bool{}
	s.unfiled = map[string]*pendingRec{}
	s.dropped = map[string]time.Time{}
	s.kickF = make(chan struct{}, 1)
	s.kickS = make(chan struct{}, 1)
}

// loadRoutes reads every worker spec's [[channel]] (at most every
// RoutesEvery); a spec that cannot be read is logged and skipped.
func (s *Service) loadRoutes(force bool) []route {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !force && s.routes != nil && time.Since(s.routesAt) < s.RoutesEvery {
		return s.routes
	}
	names, err := config.ListWorkers(s.Home)
	if err != nil {
		s.Log.Error("cannot list workers", "err", err)
		return s.routes
	}
	ws, errsList := config.LoadWorkers(s.Home, names)
	for _, e := range errsList {
		if e != nil {
			s.Log.Warn("worker spec skipped", "err", e)
		}
	}
	var out []route
	for _, w := range ws {
		if w == nil {
			continue // unreadable: its error is logged above
		}
		for _, ch := range w.Channels {
			if s.Adapters[ch.Account] == nil {
				continue
			}
			out = append(out, route{worker: w.Name, ch: ch})
		}
	}
	s.routes, s.routesAt = out, time.Now()
	return out
}

// serving is the routes that serve m on account.
func (s *Service) serving(account string, m Inbound) []route {
	var out []route
	for _, r := range s.loadRoutes(false) {
		if r.ch.Account == account && r.ch.Serves(m.Chat, !m.Room) {
			out = append(out, r)
		}
	}
	return out
}

// Deliverer is the Deliver for account's adapter: each message is logged
// and fsynced in every record that serves it before it returns nil.
func (s *Service) Deliverer(account string) Deliver {
	return func(ctx context.Context, m Inbound) error {
		if m.NetID == "" {
			return errors.New("a message without a network id")
		}
		nick := ""
		if a := s.Adapters[account]; a != nil {
			nick = a.Nick()
		}
		var firstErr error
		for _, r := range s.serving(account, m) {
			if err := s.take(ctx, r, nick, m); err != nil && firstErr == nil {
				firstErr = err
			}
		}
		kick(s.kickF)
		return firstErr
	}
}

// take logs m in r's record (once per network id) and notes it for filing.
func (s *Service) take(ctx context.Context, r route, nick string, m Inbound) error {
	rec, err := Open(s.Home.Worker(r.worker), r.ch.Name(m.Chat))
	if err != nil {
		return err
	}
	seen, err := s.seenIn(rec)
	if err != nil {
		return err
	}
	if seen[m.NetID] {
		return nil // a duplicate (a redelivery, a catch-up): logged already
	}
	s.mergeAllowed(&r, rec)
	v := Judge(r.ch, r.worker, nick, m)
	l := Line{Dir: "in", At: m.At, From: m.From, Verified: m.Verified, NetID: m.NetID, State: v.State}
	if !l.At.IsZero() {
		l.At = l.At.UTC()
	}
	switch v.State {
	case Dropped:
		key := rec.Dir + "\x00" + m.From
		s.mu.Lock()
		last, limited := s.dropped[key]
		limited = limited && time.Since(last) < time.Minute
		if !limited {
			s.dropped[key] = time.Now()
		}
		s.mu.Unlock()
		if limited {
			return nil // rate-limited: one dropped line a minute per sender
		}
		l.Note = "sender not in allow"
	default:
		l.Text, l.Standing = v.Text, v.Standing
	}
	lines, err := rec.Append(ctx, l)
	if err != nil {
		return err
	}
	s.mu.Lock()
	seen[m.NetID] = true
	if v.State == Received {
		p := s.unfiled[rec.Dir]
		if p == nil {
			p = &pendingRec{rec: rec}
			s.unfiled[rec.Dir] = p
		}
		p.lines = append(p.lines, lines[0])
	}
	s.mu.Unlock()
	if v.Pair {
		if err := s.offerPairing(ctx, rec, r, m); err != nil {
			s.Log.Warn("pairing code not sent", "worker", r.worker, "channel", rec.Channel, "err", err)
		}
	}
	return nil
}

// seenIn is the set of network ids rec has logged (read once, then kept).
func (s *Service) seenIn(rec *Record) (map[string]bool, error) {
	s.mu.Lock()
	set := s.seen[rec.Dir]
	s.mu.Unlock()
	if set != nil {
		return set, nil
	}
	lines, err := rec.Read(0)
	if err != nil {
		return nil, err
	}
	set = map[string]bool{}
	for _, l := range lines {
		if l.Dir == "in" && l.NetID != "" && l.Of == 0 {
			set[l.NetID] = true
		}
	}
	s.mu.Lock()
	if s.seen[rec.Dir] == nil {
		s.seen[rec.Dir] = set
	}
	set = s.seen[rec.Dir]
	s.mu.Unlock()
	return set, nil
}

// Recover reads every record of the served channels: messages logged but
// not filed (a crash between log and file) are filed again (filing is
// idempotent on the network id), and outbox entries without their queued
// line get one.
func (s *Service) Recover(ctx context.Context) error {
	for _, rec := range s.records() {
		lines, err := rec.Read(0)
		if err != nil {
			s.Log.Error("conversation record unreadable: left alone", "worker", rec.Worker, "channel", rec.Channel, "err", err)
			continue
		}
		refs := map[string]bool{}
		for _, m := range Fold(lines) {
			if m.Dir == "out" {
				refs[m.Ref] = true
				continue
			}
			if m.State == Received {
				s.mu.Lock()
				p := s.unfiled[rec.Dir]
				if p == nil {
					p = &pendingRec{rec: rec}
					s.unfiled[rec.Dir] = p
				}
				p.lines = append(p.lines, m.Line)
				s.mu.Unlock()
			}
		}
		pend, err := rec.Pending()
		if err != nil {
			s.Log.Error("outbox", "worker", rec.Worker, "channel", rec.Channel, "err", err)
		}
		for _, rp := range pend {
			if !refs[rp.Ref] {
				if _, err := rec.Append(ctx, Line{Dir: "out", Text: rp.Text, Run: rp.Run, Ref: rp.Ref, By: rp.By, State: Queued, Note: "logged after a restart"}); err != nil {
					return err
				}
			}
		}
	}
	kick(s.kickF)
	kick(s.kickS)
	return nil
}

// records lists the records of every served route's worker whose channel
// is on one of this service's accounts.
func (s *Service) records() []*Record {
	workers := map[string]bool{}
	for _, r := range s.loadRoutes(false) {
		workers[r.worker] = true
	}
	var out []*Record
	names := make([]string, 0, len(workers))
	for w := range workers {
		names = append(names, w)
	}
	sort.Strings(names)
	for _, w := range names {
		recs, err := List(s.Home.Worker(w))
		if err != nil {
			s.Log.Warn("conversations unreadable", "worker", w, "err", err)
			continue
		}
		for _, rec := range recs {
			acct, _, _ := strings.Cut(rec.Channel, ":")
			if s.Adapters[acct] != nil {
				out = append(out, rec)
			}
		}
	}
	return out
}

// fileAll files what waits, MaxPendingRelays at most per conversation.
func (s *Service) fileAll(ctx context.Context) {
	s.mu.Lock()
	todo := make([]*pendingRec, 0, len(s.unfiled))
	for _, p := range s.unfiled {
		todo = append(todo, p)
	}
	s.mu.Unlock()
	for _, p := range todo {
		if err := s.fileSome(ctx, p); err != nil && ctx.Err() == nil {
			s.Log.Warn("relay not filed yet; tried again shortly", "worker", p.rec.Worker, "channel", p.rec.Channel, "err", err)
		}
	}
}

// fileSome files p's waiting messages while fewer than MaxPendingRelays
// relays of its channel wait to be claimed.
func (s *Service) fileSome(ctx context.Context, p *pendingRec) error {
	part, err := tms.Open(s.Home, p.rec.Worker, tms.Options{})
	if err != nil {
		return err
	}
	f, err := part.ReadNoLock(ctx)
	if err != nil {
		return err
	}
	waiting := 0
	for _, t := range f.Tasks {
		if t.Kind == tms.KindRelay && t.Channel == p.rec.Channel && t.State == tms.Pending {
			waiting++
		}
	}
	for waiting < MaxPendingRelays {
		s.mu.Lock()
		if len(p.lines) == 0 {
			delete(s.unfiled, p.rec.Dir)
			s.mu.Unlock()
			return nil
		}
		l := p.lines[0]
		s.mu.Unlock()
		crashAt("before-file")
		task, err := part.Add(context.WithoutCancel(ctx), tms.NewTask{Text: l.Text, Kind: tms.KindRelay, Standing: l.Standing,
			Channel: p.rec.Channel, From: l.From, Msg: l.NetID})
		if err != nil {
			return err
		}
		if _, err := p.rec.Append(context.WithoutCancel(ctx), Line{Dir: "in", Of: l.Seq, Task: task.ID, State: Filed}); err != nil {
			return err
		}
		if l.Standing != tms.Owner {
			s.budgetNotice(ctx, part, p.rec)
		}
		s.mu.Lock()
		p.lines = p.lines[1:]
		s.mu.Unlock()
		waiting++
	}
	return nil
}

func kick(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// String names the service's accounts, for logs.
func (s *Service) String() string {
	names := make([]string, 0, len(s.Adapters))
	for n := range s.Adapters {
		names = append(names, n)
	}
	sort.Strings(names)
	return fmt.Sprintf("roster-chat(%s)", strings.Join(names, ","))
}

// budgetNotice tells a conversation, once per local day, that its
// proactive messages wait for the worker's budget ([chat] budget_notice).
func (s *Service) budgetNotice(ctx context.Context, part *tms.Partition, rec *Record) {
	if !part.Org.Chat.BudgetNotice {
		return
	}
	now := part.Now()
	b, err := part.BudgetState(now)
	if err != nil || !b.Over() {
		return
	}
	day := now.In(part.Zone()).Format("2006-01-02")
	mark := filepath.Join(rec.Dir, "budget-notice")
	if data, err := os.ReadFile(mark); err == nil && string(data) == day {
		return
	}
	if err := fsx.WriteFile(mark, []byte(day), 0o600); err != nil {
		return
	}
	text := fmt.Sprintf("%s has used its budget for unprompted work today (%s); your message is kept and answered when the budget clears.", rec.Worker, b.String())
	if _, _, err := rec.Queue(ctx, Reply{Text: text, By: "notice"}); err == nil {
		kick(s.kickS)
	}
}
