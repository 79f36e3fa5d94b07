package out

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Table prints rows under an upper-case header as an aligned table. A tab
// or newline in a cell becomes a space and anything else a terminal could
// act on is escaped (Printable): cells often hold worker-supplied text.
func Table(w io.Writer, header []string, rows [][]string) error {
	bw := bufio.NewWriterSize(w, 64<<10) // tabwriter writes each cell: one write per cell is 12 a row
	tw := tabwriter.NewWriter(bw, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		clean := make([]string, len(r))
		for i, c := range r {
			clean[i] = Printable(cellSpaces.Replace(c))
		}
		fmt.Fprintln(tw, strings.Join(clean, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return bw.Flush()
}

var cellSpaces = strings.NewReplacer("\t", " ", "\n", " ")
