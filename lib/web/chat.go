package web

import (
	"net/http"
	"time"

	"github.com/roster-sh/roster/lib/chat"
	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/home"
)

// maxMessages is how many of a conversation's newest messages its page
// shows.
const maxMessages = 500

// convRow is a conversation as the list shows it (roster-chat ls).
type convRow struct {
	Worker   string
	Channel  string
	Messages int
	Last     *chat.Message
	Failed   int
	Err      string
}

func (s *Server) chatList(w http.ResponseWriter, r *http.Request) {
	names, err := config.ListWorkers(s.cfg.Home)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var rows []convRow
	var problems []string
	for _, n := range names {
		recs, err := chat.List(s.cfg.Home.Worker(n))
		if err != nil {
			problems = append(problems, "worker "+n+": "+err.Error())
			continue
		}
		for _, rec := range recs {
			rows = append(rows, convSummary(rec))
		}
	}
	s.render(w, "chats", s.page(r, "conversations", map[string]any{"Rows": rows, "Problems": problems}))
}

func convSummary(rec *chat.Record) convRow {
	row := convRow{Worker: rec.Worker, Channel: rec.Channel}
	lines, err := rec.Read(0)
	if err != nil {
		row.Err = err.Error()
	}
	msgs := chat.Fold(lines)
	row.Messages = len(msgs)
	for _, m := range msgs {
		if m.State == chat.Failed {
			row.Failed++
		}
	}
	if len(msgs) > 0 {
		row.Last = msgs[len(msgs)-1]
	}
	return row
}

// chatMessage is one message of a conversation's page.
type chatMessage struct {
	*chat.Message
	At string
}

func (s *Server) chatPage(w http.ResponseWriter, r *http.Request) {
	worker := r.PathValue("worker")
	if err := home.ValidWorker(worker); err != nil {
		s.fail(w, r, err)
		return
	}
	wk, err := s.cfg.Home.ExistingWorker(worker)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ch := r.URL.Query().Get("channel")
	rec, err := chat.Open(wk, ch)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	lines, rerr := rec.Read(0)
	msgs := chat.Fold(lines)
	cut := 0
	if len(msgs) > maxMessages {
		cut = len(msgs) - maxMessages
		msgs = msgs[cut:]
	}
	org, err := config.LoadOrg(s.cfg.Home)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var out []chatMessage
	for _, m := range msgs {
		out = append(out, chatMessage{Message: m, At: m.At.In(org.Zone()).Format(time.DateTime)})
	}
	d := map[string]any{"Worker": worker, "Channel": ch, "Messages": out, "Cut": cut, "Err": ""}
	if rerr != nil {
		d["Err"] = rerr.Error()
	}
	s.render(w, "chat", s.page(r, "conversation "+ch, d))
}
