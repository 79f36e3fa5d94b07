package chat

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
)

// Pairing is a stranger's request to reach a worker: a code sent once a
// day at most to a DM sender outside allow; `roster-chat pair approve
// CODE` lets that sender in (docs/channels.md, "Intake").
type Pairing struct {
	Code    string    `json:"code"`
	Worker  string    `json:"worker"`
	Channel string    `json:"channel"`
	From    string    `json:"from"`
	At      time.Time `json:"at"`
	State   string    `json:"state"` // "pending" | "denied"
}

// PairingEvery is how often one sender may be sent a code.
const PairingEvery = 24 * time.Hour

// pairingKeep is how long a code is kept (then it is forgotten).
const pairingKeep = 7 * 24 * time.Hour

func pairingDir(h home.Home) string { return filepath.Join(h.ChatDir(), "pairing") }

// codeAlphabet leaves out what reads alike (0/O, 1/I/L).
const codeAlphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"

func newCode() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	out := make([]byte, 0, 9)
	for i, c := range b {
		if i == 4 {
			out = append(out, '-')
		}
		out = append(out, codeAlphabet[int(c)%len(codeAlphabet)])
	}
	return string(out)
}

// Pairings lists the codes kept (forgetting those older than a week).
func Pairings(h home.Home) ([]Pairing, error) {
	ents, err := os.ReadDir(pairingDir(h))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Pairing
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		path := filepath.Join(pairingDir(h), e.Name())
		data, err := os.ReadFile(path)
		var p Pairing
		if err == nil {
			err = json.Unmarshal(data, &p)
		}
		if err != nil || p.Code+".json" != e.Name() {
			continue
		}
		if time.Since(p.At) > pairingKeep {
			_ = os.Remove(path)
			continue
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out, nil
}

// offerPairing sends m's sender a pairing code, unless one went to that
// sender for this channel within PairingEvery.
func (s *Service) offerPairing(ctx context.Context, rec *Record, r route, m Inbound) error {
	all, err := Pairings(s.Home)
	if err != nil {
		return err
	}
	for _, p := range all {
		if p.Worker == r.worker && p.Channel == rec.Channel && p.From == m.From && time.Since(p.At) < PairingEvery {
			return nil
		}
	}
	p := Pairing{Code: newCode(), Worker: r.worker, Channel: rec.Channel, From: m.From, At: time.Now().UTC(), State: "pending"}
	data, _ := json.Marshal(p)
	if err := fsx.MkdirDurable(s.Home.ChatDir(), 0o700); err != nil {
		return err
	}
	if err := fsx.MkdirDurable(pairingDir(s.Home), 0o700); err != nil {
		return err
	}
	if err := fsx.WriteFile(filepath.Join(pairingDir(s.Home), p.Code+".json"), data, 0o600); err != nil {
		return err
	}
	text := fmt.Sprintf("Hello. %s answers only people its operator allows. To ask for access, give the operator this code: %s (they run: roster chat pair approve %s).", r.worker, p.Code, p.Code)
	_, _, err = rec.Queue(ctx, Reply{Chat: m.Chat, Text: text, By: "pairing"})
	kick(s.kickS)
	return err
}

func findPairing(h home.Home, code string) (Pairing, string, error) {
	code = strings.ToUpper(strings.TrimSpace(code))
	all, err := Pairings(h)
	if err != nil {
		return Pairing{}, "", err
	}
	for _, p := range all {
		if p.Code == code {
			return p, filepath.Join(pairingDir(h), p.Code+".json"), nil
		}
	}
	return Pairing{}, "", errs.New(errs.ErrNotFound, fmt.Sprintf("no pairing code %q (roster-chat pair ls lists them; a code is kept a week)", code))
}

// Approve lets the sender of code reach its worker on its channel: the
// identity is added to the record's allowed list (allowed.json), which
// intake adds to the channel's allow.
func Approve(ctx context.Context, h home.Home, code string) (Pairing, error) {
	p, path, err := findPairing(h, code)
	if err != nil {
		return p, err
	}
	rec, err := Open(h.Worker(p.Worker), p.Channel)
	if err != nil {
		return p, err
	}
	l, err := rec.lock(ctx)
	if err != nil {
		return p, err
	}
	defer l.Unlock()
	allowed, err := rec.Allowed()
	if err != nil {
		return p, err
	}
	if !contains(allowed, p.From) {
		allowed = append(allowed, p.From)
		data, _ := json.Marshal(allowed)
		if err := fsx.WriteFile(filepath.Join(rec.Dir, "allowed.json"), data, 0o600); err != nil {
			return p, err
		}
	}
	return p, os.Remove(path)
}

// Deny refuses code: no new code goes to its sender for PairingEvery.
func Deny(h home.Home, code string) (Pairing, error) {
	p, path, err := findPairing(h, code)
	if err != nil {
		return p, err
	}
	p.State = "denied"
	data, _ := json.Marshal(p)
	return p, fsx.WriteFile(path, data, 0o600)
}

// Allowed is the identities pairing let in for this record.
func (r *Record) Allowed() ([]string, error) {
	data, err := os.ReadFile(filepath.Join(r.Dir, "allowed.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, errs.New(errs.ErrRefused, fmt.Sprintf("%s/allowed.json is unreadable: %v", r.Dir, err))
	}
	return out, nil
}

// mergeAllowed adds to r's allow what pairing let in for rec.
func (s *Service) mergeAllowed(r *route, rec *Record) {
	extra, err := rec.Allowed()
	if err != nil {
		s.Log.Warn("pairing approvals unreadable; ignored", "err", err)
		return
	}
	if len(extra) > 0 {
		r.ch.Allow = append(append([]string{}, r.ch.Allow...), extra...)
	}
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
