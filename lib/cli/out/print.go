package out

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Table prints rows under an upper-case header as an aligned table. A tab
// or newline in a cell becomes a space and anything else a terminal could
// act on is escaped (Printable): cells often hold worker-supplied text.
func Table(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		clean := make([]string, len(r))
		for i, c := range r {
			clean[i] = Printable(cellSpaces.Replace(c))
		}
		fmt.Fprintln(tw, strings.Join(clean, "\t"))
	}
	return tw.Flush()
}

var cellSpaces = strings.NewReplacer("\t", " ", "\n", " ")
