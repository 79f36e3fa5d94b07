package repos

import (
	"bytes"
	"io"
	"strings"
)

// writeReport writes the client's answer to a push, as receive-pack
// would: report-status ("unpack STATUS", then "ok REF" or "ng REF
// roster: KIND: reason" for each of the client's commands) on side band 1
// when the client asked for a side band, and msgs (and each refusal) as
// "remote: roster: ..." lines on band 2.
func writeReport(w io.Writer, p *Push, unpack string, vs []Verdict, msgs []string) error {
	if unpack == "" {
		unpack = "ok"
	}
	var rep bytes.Buffer
	rep.Write(Pkt("unpack " + oneLine(unpack) + "\n"))
	for _, v := range vs {
		if v.Ref == "push-cert" {
			for _, c := range p.Commands {
				rep.Write(Pkt("ng " + c.Ref + " " + reasonText(v) + "\n"))
			}
			continue
		}
		if v.OK() {
			rep.Write(Pkt("ok " + v.Ref + "\n"))
		} else {
			rep.Write(Pkt("ng " + v.Ref + " " + reasonText(v) + "\n"))
		}
	}
	rep.Write(Flush)
	var msg strings.Builder
	for _, m := range msgs {
		msg.WriteString("roster: " + oneLine(m) + "\n")
	}
	for _, l := range refusedLines(vs) {
		if !contains(msgs, l) {
			msg.WriteString("roster: " + oneLine(l) + "\n")
		}
	}
	sideband := p.Has("side-band-64k") || p.Has("side-band")
	report := p.Has("report-status") || p.Has("report-status-v2")
	if !sideband {
		if !report {
			_, err := w.Write(Flush)
			return err
		}
		_, err := w.Write(rep.Bytes())
		return err
	}
	if msg.Len() > 0 {
		if err := writeBand(w, 2, []byte(msg.String())); err != nil {
			return err
		}
	}
	if report {
		if err := writeBand(w, 1, rep.Bytes()); err != nil {
			return err
		}
	}
	_, err := w.Write(Flush)
	return err
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func oneLine(s string) string {
	return strings.NewReplacer("\n", " ", "\r", " ", "\x00", " ").Replace(s)
}

func reasonText(v Verdict) string { return oneLine("roster: " + v.Kind + ": " + v.Reason) }

// writeBand writes data on side band n in packets git takes (at most
// 65515 bytes of data each).
func writeBand(w io.Writer, band byte, data []byte) error {
	const max = 65515
	for len(data) > 0 {
		n := min(len(data), max)
		pkt := append([]byte{band}, data[:n]...)
		if _, err := w.Write(Pkt(string(pkt))); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}
