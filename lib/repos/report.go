package repos

import (
	"bytes"
	"io"
	"strings"
)

// writeReport answers a push refused before git ran, as receive-pack
// would: report-status ("unpack ok", then "ng REF roster: KIND: reason"
// for each command) on side-band 1 when the client asked for a side band,
// and each reason also as a "remote: roster: ..." line on band 2.
func writeReport(w io.Writer, p *Push, vs []Verdict, _ []string) error {
	var rep bytes.Buffer
	rep.Write(Pkt("unpack ok\n"))
	for _, v := range vs {
		ref := v.Ref
		if ref == "push-cert" && len(p.Commands) > 0 {
			for _, c := range p.Commands {
				rep.Write(Pkt("ng " + c.Ref + " " + reasonText(v) + "\n"))
			}
			continue
		}
		rep.Write(Pkt("ng " + ref + " " + reasonText(v) + "\n"))
	}
	rep.Write(Flush)
	sideband := p.Has("side-band-64k") || p.Has("side-band")
	if !p.Has("report-status") && !p.Has("report-status-v2") {
		// A client that asked for no report gets the reasons alone.
		if sideband {
			return writeBand(w, 2, []byte(strings.Join(refusedLines(vs), "\n")+"\n"), true)
		}
		_, err := w.Write(Flush)
		return err
	}
	if !sideband {
		_, err := w.Write(rep.Bytes())
		return err
	}
	var msg strings.Builder
	for _, l := range refusedLines(vs) {
		msg.WriteString("roster: " + l + "\n")
	}
	if err := writeBand(w, 2, []byte(msg.String()), false); err != nil {
		return err
	}
	return writeBand(w, 1, rep.Bytes(), true)
}

func reasonText(v Verdict) string {
	s := "roster: " + v.Kind + ": " + v.Reason
	return strings.NewReplacer("\n", " ", "\x00", " ").Replace(s)
}

// writeBand writes data on side band n in packets git takes (at most
// 65515 bytes of data each), then a flush if last.
func writeBand(w io.Writer, band byte, data []byte, last bool) error {
	const max = 65515
	for len(data) > 0 {
		n := min(len(data), max)
		pkt := append([]byte{band}, data[:n]...)
		if _, err := w.Write(Pkt(string(pkt))); err != nil {
			return err
		}
		data = data[n:]
	}
	if last {
		_, err := w.Write(Flush)
		return err
	}
	return nil
}
