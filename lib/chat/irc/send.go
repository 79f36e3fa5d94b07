package irc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ergochat/irc-go/ircevent"
	"github.com/ergochat/irc-go/ircmsg"
)

// ErrNotConnected is Send's error while the account has no connection.
var ErrNotConnected = errors.New("irc: not connected")

// Send sends text to chat: a room among Config.Chats ("#ops"), an
// unverified nick ("~bob" is sent to bob), or a verified account ("alice",
// sent to the nick that WHOIS shows logged in as alice). The text is made
// safe (see safeLines), split into lines that fit the protocol's 512
// bytes, and sent no faster than the flood limit allows (waiting, within
// ctx). The id returned is made up (IRC has no message ids for what a
// client sends): the first line's.
func (a *Adapter) Send(ctx context.Context, chatID, text string) (string, error) {
	s := a.current()
	if s == nil {
		return "", ErrNotConnected
	}
	select {
	case a.sendSem <- struct{}{}:
		defer func() { <-a.sendSem }()
	case <-ctx.Done():
		return "", ctx.Err()
	}
	target, err := a.target(ctx, s, chatID)
	if err != nil {
		return "", err
	}
	budget := lineBudget(target)
	if budget < minBudget {
		return "", fmt.Errorf("irc: target %q is too long to send to", target)
	}
	lines := safeLines(text, budget)
	if len(lines) == 0 {
		return "", errors.New("irc: nothing to send: the text is empty once control characters are removed")
	}
	id := newNetID()
	for i, l := range lines {
		if err := a.bucket.wait(ctx); err != nil {
			return "", fmt.Errorf("irc: %d of %d lines sent: %w", i, len(lines), err)
		}
		if a.current() != s {
			return "", fmt.Errorf("irc: connection lost after %d of %d lines", i, len(lines))
		}
		if err := s.conn.Send("PRIVMSG", target, l); err != nil {
			return "", fmt.Errorf("irc: %d of %d lines sent: %w", i, len(lines), err)
		}
	}
	return id, nil
}

func (a *Adapter) current() *session {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.live != nil && !a.live.conn.Connected() {
		return nil
	}
	return a.live
}

// target is the PRIVMSG target for a chat.
func (a *Adapter) target(ctx context.Context, s *session, chatID string) (string, error) {
	switch {
	case chatID == "":
		return "", errors.New("irc: no chat to send to")
	case isRoomName(chatID):
		for _, r := range a.rooms {
			if foldEq(r, chatID) {
				return r, nil
			}
		}
		return "", fmt.Errorf("irc: %s is not a room among the account's chats", chatID)
	case chatID[0] == '~':
		if !validNick(chatID[1:]) {
			return "", fmt.Errorf("irc: %q is not a nick", chatID)
		}
		return chatID[1:], nil
	}
	if !validNick(chatID) {
		return "", fmt.Errorf("irc: %q is not an account name", chatID)
	}
	// A verified account: send only to a nick the server says is logged in
	// as it now, never to whoever holds a nick of that name.
	a.mu.Lock()
	cands := []string{a.seen[foldIRC(chatID)], chatID}
	a.mu.Unlock()
	for _, n := range cands {
		if n == "" {
			continue
		}
		acct, err := s.whois(ctx, n)
		if err != nil {
			return "", err
		}
		if foldEq(acct, chatID) {
			return n, nil
		}
	}
	return "", fmt.Errorf("irc: account %s is not online, or not under a nick WHOIS shows logged in as it", chatID)
}

// whois is one WHOIS in flight (Send holds sendSem, so at most one).
type whois struct {
	nick    string
	account string
	done    chan struct{}
}

func (s *session) whoisCallbacks() {
	match := func(m ircmsg.Message) *whois {
		s.mu.Lock()
		defer s.mu.Unlock()
		if w := s.whoisReq; w != nil && len(m.Params) > 1 && foldEq(m.Params[1], w.nick) {
			return w
		}
		return nil
	}
	s.conn.AddCallback(ircevent.RPL_WHOISACCOUNT, func(m ircmsg.Message) {
		if w := match(m); w != nil && len(m.Params) > 2 {
			s.mu.Lock()
			w.account = m.Params[2]
			s.mu.Unlock()
		}
	})
	end := func(m ircmsg.Message) {
		if w := match(m); w != nil {
			s.mu.Lock()
			if s.whoisReq == w {
				s.whoisReq = nil
				close(w.done)
			}
			s.mu.Unlock()
		}
	}
	s.conn.AddCallback(ircevent.RPL_ENDOFWHOIS, end)
	s.conn.AddCallback(ircevent.ERR_NOSUCHNICK, end)
}

// whois asks the server which account nick is logged in as ("" = none).
func (s *session) whois(ctx context.Context, nick string) (string, error) {
	w := &whois{nick: nick, done: make(chan struct{})}
	s.mu.Lock()
	s.whoisReq = w
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.whoisReq == w {
			s.whoisReq = nil
		}
		s.mu.Unlock()
	}()
	if err := s.conn.Send("WHOIS", nick); err != nil {
		return "", err
	}
	t := time.NewTimer(s.a.Timeout)
	defer t.Stop()
	select {
	case <-w.done:
		s.mu.Lock()
		defer s.mu.Unlock()
		return w.account, nil
	case <-ctx.Done():
		return "", ctx.Err()
	case <-s.gone:
		return "", ErrNotConnected
	case <-t.C:
		return "", fmt.Errorf("irc: no answer to WHOIS %s", nick)
	}
}

// bucket is a token bucket: burst tokens, one more every interval.
type bucket struct {
	mu     sync.Mutex
	burst  float64
	every  time.Duration
	tokens float64
	last   time.Time
}

func (b *bucket) init(burst int, every time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.burst, b.every, b.tokens, b.last = float64(burst), every, float64(burst), time.Now()
}

// wait takes a token, waiting for one (or for ctx to end).
func (b *bucket) wait(ctx context.Context) error {
	for {
		b.mu.Lock()
		now := time.Now()
		b.tokens = min(b.burst, b.tokens+float64(now.Sub(b.last))/float64(b.every))
		b.last = now
		if b.tokens >= 1 {
			b.tokens--
			b.mu.Unlock()
			return nil
		}
		need := time.Duration((1 - b.tokens) * float64(b.every))
		b.mu.Unlock()
		t := time.NewTimer(need)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
