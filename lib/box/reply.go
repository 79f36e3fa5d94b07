package box

import (
	"context"
	"fmt"

	"github.com/roster-sh/roster/lib/chat"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/outbox"
)

// ServedChannels are the channels a run may reply to: the one it serves
// (a relay's, a live session's, a task's --channel).
func (s *Supervision) ServedChannels() []string {
	if s.Spec == nil || s.Spec.Channel == "" {
		return nil
	}
	return []string{s.Spec.Channel}
}

// applyReply queues a reply action in the channel's outbox
// (docs/channels.md, "Replies"): only to a channel the run serves
// (channel_not_served), at most chat.MaxRepliesOfRun per run and
// chat.MaxReply bytes each. roster-chat sends it.
func (s *Supervision) applyReply(ctx context.Context, run string, a *outbox.Action) error {
	served := s.ServedChannels()
	ch := a.Channel
	if ch == "" {
		if len(served) == 0 {
			return fmt.Errorf("channel_not_served: this run serves no channel (only a relay, a live session or a task filed with --channel can reply)")
		}
		ch = served[0]
	}
	ok := false
	for _, c := range served {
		ok = ok || c == ch
	}
	if !ok {
		return fmt.Errorf("channel_not_served: this run serves %v, not %q", served, ch)
	}
	if s.replies >= chat.MaxRepliesOfRun {
		return fmt.Errorf("reply_limit: a run may send at most %d replies", chat.MaxRepliesOfRun)
	}
	if len(a.Text) > chat.MaxReply {
		return errs.New(errs.ErrUsage, fmt.Sprintf("reply_too_long: %d bytes is over the limit of %d (16 KiB) per reply: say it shorter, or in several replies", len(a.Text), chat.MaxReply))
	}
	rec, err := chat.Open(s.Part.W, ch)
	if err != nil {
		return err
	}
	if _, _, err := rec.Queue(ctx, chat.Reply{Text: a.Text, Run: run, By: "run"}); err != nil {
		return err
	}
	s.replies++
	return nil
}
