package chat

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/notify"
)

// List is the worker's conversation records, one per folder of
// conversations/ whose name decodes to a channel.
func List(w home.Worker) ([]*Record, error) {
	ents, err := os.ReadDir(w.Conversations())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*Record
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		ch, err := home.DecodeChannel(e.Name())
		if err != nil {
			continue
		}
		rec, err := Open(w, ch)
		if err == nil {
			out = append(out, rec)
		}
	}
	return out, nil
}

// SendEvery is how often the outboxes are looked at without a kick.
var SendEvery = 250 * time.Millisecond

// Run runs the service until ctx ends: every adapter, the filer and the
// sender. It recovers first (Recover). When ctx ends it stops taking
// messages and returns once the adapters have stopped: what was logged
// stays logged and is filed at the next start.
func (s *Service) Run(ctx context.Context) error {
	s.init()
	s.loadRoutes(true)
	if err := s.Recover(ctx); err != nil {
		return err
	}
	var wg sync.WaitGroup
	errc := make(chan error, len(s.Adapters))
	for name, a := range s.Adapters {
		wg.Add(1)
		go func(name string, a Adapter) {
			defer wg.Done()
			if err := a.Run(ctx, s.Deliverer(name)); err != nil && ctx.Err() == nil {
				errc <- fmt.Errorf("account %s: %w", name, err)
			}
		}(name, a)
	}
	wg.Add(2)
	go func() { defer wg.Done(); s.loop(ctx, s.kickF, 2*time.Second, s.fileAll) }()
	go func() { defer wg.Done(); s.loop(ctx, s.kickS, SendEvery, s.sendAll) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
		s.Log.Error("an account cannot work; the others go on", "err", err)
		<-ctx.Done()
	}
	wg.Wait()
	return err
}

// loop calls fn at each kick and every so often, until ctx ends.
func (s *Service) loop(ctx context.Context, kicks chan struct{}, every time.Duration, fn func(context.Context)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		fn(ctx)
		select {
		case <-ctx.Done():
			return
		case <-kicks:
		case <-t.C:
		}
	}
}

// sendAll delivers what every served outbox holds that is due.
func (s *Service) sendAll(ctx context.Context) {
	for _, rec := range s.records() {
		pend, err := rec.Pending()
		if err != nil {
			s.Log.Warn("outbox", "worker", rec.Worker, "channel", rec.Channel, "err", err)
		}
		for i := range pend {
			if ctx.Err() != nil {
				return
			}
			s.sendOne(ctx, rec, &pend[i])
		}
	}
}

// sendOne makes one attempt at rp, if it is due: marked sending, sent,
// then logged sent (resent when an earlier attempt may have gone out);
// a failure is retried with backoff until DeliverFor has passed.
func (s *Service) sendOne(ctx context.Context, rec *Record, rp *Reply) {
	now := time.Now()
	if now.Before(rp.Next) {
		return
	}
	acct, chat, _ := strings.Cut(rec.Channel, ":")
	if rp.Chat != "" {
		chat = rp.Chat
	}
	a := s.Adapters[acct]
	if a == nil {
		return
	}
	if now.Sub(rp.Queued) > DeliverFor {
		why := fmt.Sprintf("not delivered in %s (last error: %s)", DeliverFor, rp.Error)
		if err := rec.GiveUp(ctx, *rp, why); err != nil {
			s.Log.Error("outbox", "worker", rec.Worker, "channel", rec.Channel, "err", err)
		}
		s.Log.Error("reply failed", "worker", rec.Worker, "channel", rec.Channel, "ref", rp.Ref, "why", why)
		s.notifyFailed(rec, *rp, why)
		return
	}
	resent := rp.MaybeSent()
	if err := rec.Attempt(rp); err != nil {
		s.Log.Error("outbox", "worker", rec.Worker, "channel", rec.Channel, "err", err)
		return
	}
	// A send under way when SIGTERM comes is let finish (bounded): its
	// outcome is known then, not guessed.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	id, err := a.Send(sctx, chat, rp.Text)
	cancel()
	if err != nil && ctx.Err() != nil {
		// Stopping: the adapter may have closed mid-send, after the
		// network had it. Left marked sending: logged resent if sent
		// again (a possible duplicate, never a loss).
		return
	}
	if err != nil {
		next := now.Add(Backoff(rp.Attempts))
		if e := rec.AttemptFailed(rp, err, next); e != nil {
			s.Log.Error("outbox", "worker", rec.Worker, "channel", rec.Channel, "err", e)
		}
		s.Log.Warn("reply not sent; retried", "worker", rec.Worker, "channel", rec.Channel, "ref", rp.Ref, "attempt", rp.Attempts, "next", next.Format(time.RFC3339), "err", err)
		return
	}
	crashAt("after-send")
	// Logged whatever ctx says now: a SIGTERM that came during the send
	// must not turn a delivered reply into a resend.
	if err := rec.Delivered(context.WithoutCancel(ctx), *rp, id, resent); err != nil {
		s.Log.Error("reply sent but not logged (it is sent again after a restart, marked resent)", "worker", rec.Worker, "channel", rec.Channel, "err", err)
	}
}

// notifyFailed runs org.toml's [notify] on_failure for a reply that was
// never delivered (ROSTER_ENDED=reply_failed).
func (s *Service) notifyFailed(rec *Record, rp Reply, why string) {
	org, err := config.LoadOrg(s.Home)
	if err != nil || len(org.Notify.OnFailure) == 0 {
		return
	}
	notify.Run(context.Background(), org.Notify.OnFailure, notify.Event{Home: s.Home.Dir, Worker: rec.Worker, Run: rp.Run,
		Attested: "failed", Ended: "reply_failed", Reason: "reply to " + rec.Channel + " " + why})
}
