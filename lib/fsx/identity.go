package fsx

import (
	"fmt"
	"syscall"
	"time"
)

// A long-lived reader (the dispatcher, roster-web) caches what it read by
// the file's identity, so its work follows what changed: device, inode,
// size, mtime, ctime. An identity taken within RacyWindow of the file's
// ctime is not trusted at the next look (a change in the same timestamp
// tick would keep every field): the file is read again.

// RacyWindow: an identity taken this soon after the file's ctime is
// re-checked by reading.
const RacyWindow = time.Second

// FileID is what identifies one version of a file (or a folder's
// listing: a folder's mtime and ctime move when an entry is made,
// renamed or removed).
type FileID struct {
	dev, ino, size uint64
	mtime, ctime   int64
	Racy           bool // its ctime was within RacyWindow of the stat (or never trusted)
}

// Untrusted is an identity no other equals: what was read under it is
// read again at the next look.
var Untrusted = FileID{Racy: true}

// StatID is path's identity; ok is false when it cannot be stat'd.
func StatID(path string) (FileID, bool) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return FileID{}, false
	}
	ctime := st.Ctim.Nano()
	return FileID{dev: st.Dev, ino: st.Ino, size: uint64(st.Size), mtime: st.Mtim.Nano(), ctime: ctime,
		Racy: time.Now().UnixNano()-ctime < int64(RacyWindow)}, true
}

// String is the identity as text, for a cache kept in a file (the
// racy mark is not in it: check Racy before keeping one).
func (a FileID) String() string {
	return fmt.Sprintf("%d:%d:%d:%d:%d", a.dev, a.ino, a.size, a.mtime, a.ctime)
}

// Same tells whether a and b are the same trusted version.
func (a FileID) Same(b FileID) bool {
	return !a.Racy && a.dev == b.dev && a.ino == b.ino && a.size == b.size && a.mtime == b.mtime && a.ctime == b.ctime
}
