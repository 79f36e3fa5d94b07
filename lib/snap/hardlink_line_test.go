package snap

import (
	"encoding/base64"
	"strings"
	"testing"
)

// A hardlink line escapes the names on both sides of "=>", so neither can
// forge a line; --json gives the link's name as link_to, or link_to_b64
// when it is not UTF-8.
func TestHardlinkLineEscapesBothNames(t *testing.T) {
	c := Change{Op: OpNew, Path: "store/a\nb", Type: TypeFile, Itemize: "hf+++++++++", LinkTo: "store/x => \xff\n"}
	if got, want := c.Line(), `hf+++++++++ store/a\#012b => store/x => \#377\#012`; got != want {
		t.Fatalf("line %q, want %q", got, want)
	}
	j := c.JSON()
	if j.LinkTo != "" || j.LinkToB64 != base64.StdEncoding.EncodeToString([]byte(c.LinkTo)) {
		t.Fatalf("json %+v", j)
	}
	c.LinkTo = "store/é"
	if j := c.JSON(); j.LinkTo != "store/é" || j.LinkToB64 != "" || !strings.HasSuffix(j.Line, " => store/\\#303\\#251") {
		t.Fatalf("json %+v", j)
	}
	if j := (&Change{Op: OpNew, Path: "store/c", Type: TypeFile, Itemize: ">f+++++++++"}).JSON(); j.LinkTo != "" || j.LinkToB64 != "" || j.Line != ">f+++++++++ store/c" {
		t.Fatalf("a plain file line changed: %+v", j)
	}
}

// rsync's file-list order (which picks a group's leader): a folder's files
// first, then its subfolders depth first, folder names compared with their
// slash.
func TestRsyncOrderFilesBeforeSubfolders(t *testing.T) {
	want := []string{"store/zz", "store/a.b/m", "store/a/m", "store/a/n", "store/a/sub/a", "store/b/a"}
	for i := range want {
		for j := range want {
			if got := rsyncLess(want[i], want[j]); got != (i < j) {
				t.Errorf("rsyncLess(%q, %q) = %v", want[i], want[j], got)
			}
		}
	}
}
