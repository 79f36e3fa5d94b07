package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func specWithUID(t *testing.T, h interface{ SpecFile(string) string }, name string, uid int) {
	t.Helper()
	if err := os.WriteFile(h.SpecFile(name), []byte(fmt.Sprintf("command = [\"/bin/true\"]\nuid = %d\n", uid)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSharedUIDIsRefusedForBothDespiteTheCache: the uid link lets a
// worker alone with its uid load without reading every other spec, yet a
// second worker given the same uid is refused at once, and so is the
// first from then on; LoadWorkers (one read per spec) agrees.
func TestSharedUIDIsRefusedForBothDespiteTheCache(t *testing.T) {
	h := newHome(t)
	os.MkdirAll(h.WorkersDir(), 0o700)
	specWithUID(t, h, "dobby", 250100)
	specWithUID(t, h, "kreacher", 250102)
	if _, err := LoadWorker(h, "dobby"); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(h.Data(), "uids", "250100")
	if target, err := os.Readlink(link); err != nil || target != "dobby" {
		t.Fatalf("uid link %q %v, want dobby", target, err)
	}
	// The link is the answer for its owner: with the other specs unreadable
	// the load still succeeds (they were not read).
	os.Chmod(h.SpecFile("kreacher"), 0)
	if os.Geteuid() != 0 {
		if _, err := LoadWorker(h, "dobby"); err != nil {
			t.Fatalf("owner's load read the others: %v", err)
		}
	}
	os.Chmod(h.SpecFile("kreacher"), 0o644)

	specWithUID(t, h, "elf", 250100) // by hand: dobby's uid
	if _, err := LoadWorker(h, "elf"); err == nil || !strings.Contains(err.Error(), "uid 250100 is also worker dobby's") {
		t.Fatalf("elf with dobby's uid: %v", err)
	}
	if _, err := os.Readlink(link); err == nil {
		t.Fatal("the refusal left the owner's uid link in place")
	}
	if _, err := LoadWorker(h, "dobby"); err == nil || !strings.Contains(err.Error(), "uid 250100 is also worker elf's") {
		t.Fatalf("dobby after elf took its uid: %v", err)
	}
	ws, errs := LoadWorkers(h, []string{"dobby", "elf", "kreacher"})
	if errs[0] == nil || errs[1] == nil || errs[2] != nil || ws[2] == nil || ws[2].UID != 250102 {
		t.Fatalf("LoadWorkers: %v %v", ws, errs)
	}
	// elf gets a uid of its own: both load again.
	specWithUID(t, h, "elf", 250101)
	for _, n := range []string{"elf", "dobby"} {
		if _, err := LoadWorker(h, n); err != nil {
			t.Fatalf("%s after the fix: %v", n, err)
		}
	}
}

// TestLoadWorkersTrustsTheLinksOfTheNamed: a few workers of a big home
// (the daily sweep's batch) are checked by their uid links alone, as
// LoadWorker checks one; a named worker without its link makes the check
// read every spec, and then a shared uid is refused for both.
func TestLoadWorkersTrustsTheLinksOfTheNamed(t *testing.T) {
	h := newHome(t)
	os.MkdirAll(h.WorkersDir(), 0o700)
	specWithUID(t, h, "dobby", 250100)
	if _, err := LoadWorker(h, "dobby"); err != nil { // records its link
		t.Fatal(err)
	}
	specWithUID(t, h, "elf", 250100) // by hand, not loaded yet
	if ws, errs := LoadWorkers(h, []string{"dobby"}); errs[0] != nil || ws[0] == nil {
		t.Fatalf("dobby by its link: %v", errs[0])
	}
	if _, errs := LoadWorkers(h, []string{"dobby", "elf"}); errs[0] == nil || errs[1] == nil {
		t.Fatalf("dobby and elf sharing a uid: %v", errs)
	}
	os.Remove(filepath.Join(h.Data(), "uids", "250100"))
	if _, errs := LoadWorkers(h, []string{"dobby"}); errs[0] == nil || !strings.Contains(errs[0].Error(), "also worker elf's") {
		t.Fatalf("dobby without its link: %v", errs[0])
	}
}
