package snap

import (
	"fmt"
	"testing"
)

// benchTree is a walk's entries for n single-link files in 1,000
// folders, inode numbers from inoBase (bench/snap.sh's shape).
func benchTree(n int, inoBase uint64) []Entry {
	es := make([]Entry, 0, n+1001)
	es = append(es, Entry{Path: "store", Type: TypeDir, Mode: 0o755})
	for d := 0; d < 1000; d++ {
		es = append(es, Entry{Path: fmt.Sprintf("store/d%04d", d), Type: TypeDir, Mode: 0o755})
		for i := d; i < n; i += 1000 {
			es = append(es, Entry{Path: fmt.Sprintf("store/d%04d/f%06d", d, i), Type: TypeFile, Mode: 0o644,
				Size: int64(1000 + i%5000), Mtime: int64(i), Ino: inoBase + uint64(i), Ctime: int64(i)})
		}
	}
	return es
}

// BenchmarkCompareRestore is a restore's change list: the live walk of
// 100,000 files against the snapshot's entries, 3% of them changed. Its
// live names are grouped by inode only where an inode has more links
// than one (before: 200,000 map insertions, two thirds of the time).
func BenchmarkCompareRestore(b *testing.B) {
	live := benchTree(100000, 1000)
	snapEntries := benchTree(100000, 0)
	for i := 0; i < len(snapEntries); i += 33 {
		snapEntries[i].Mtime++
	}
	idx := index(live)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if c := compare(live, idx, snapEntries, true); len(c) == 0 {
			b.Fatal("no changes")
		}
	}
}
