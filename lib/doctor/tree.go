package doctor

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/cli"
)

// untrusted are filesystems where flock(2) and rename(2) do not hold as
// roster needs them (a lock seen by one host only, a rename not atomic to
// every reader), by statfs magic.
var untrusted = map[int64]string{
	0x6969:     "NFS",
	0x65735546: "FUSE",
	0xFF534D42: "CIFS",
	0xFE534D42: "SMB2",
	0x517B:     "SMB",
	0x01021997: "9p",
}

// lowFree warns below 1 GiB or 1% of the filesystem free, whichever is
// less, when org.toml sets no store.min_free.
const lowFree = 1 << 30

// checkTree: the data tree's filesystem, its space, data/'s mode, the vault.
func checkTree(r *Report, o Options) {
	data := o.Home.Data()
	var st unix.Statfs_t
	if err := unix.Statfs(data, &st); err != nil {
		r.add("tree", Problem, data, fmt.Sprintf("cannot stat the data tree: %v", err), "roster init makes it")
		return
	}
	if name, bad := untrusted[int64(st.Type)]; bad {
		r.add("tree", Problem, data, fmt.Sprintf("the data tree is on %s: flock(2) and atomic rename(2), which every roster program relies on, do not hold there", name),
			"move $ROSTER_HOME to a local filesystem (ext4, xfs, btrfs)")
	} else {
		r.add("tree", OK, data, "the data tree is on a local filesystem", "")
	}
	checkSpace(r, data, st)
	if fi, err := os.Stat(data); err == nil && fi.Mode().Perm()&0o077 != 0 {
		r.add("tree", Problem, data, fmt.Sprintf("data/ is open to group or others (mode %04o): it holds every worker's store, tasks and runs", fi.Mode().Perm()),
			"chmod 700 "+data)
	}
	checkVault(r, o.Home.Vault())
}

func checkSpace(r *Report, data string, st unix.Statfs_t) {
	free := int64(st.Bavail) * int64(st.Bsize)
	total := int64(st.Blocks) * int64(st.Bsize)
	floor := min(int64(lowFree), total/100)
	msg := fmt.Sprintf("%s free of %s", cli.IEC(uint64(free)), cli.IEC(uint64(total)))
	if st.Files > 0 {
		msg += fmt.Sprintf(", %d of %d inodes free", st.Ffree, st.Files)
	}
	switch {
	case free < floor:
		r.add("tree", Warning, data, "low on space: "+msg+": snapshots and runs stop when it is gone",
			"free space, or lower [storage] snapshot keeps (roster-snap prune); store.min_free holds workers before it is too late")
	case st.Files > 0 && st.Ffree < st.Files/100:
		r.add("tree", Warning, data, "low on inodes: "+msg+": every snapshot links one inode per file", "remove old snapshots (roster-snap prune)")
	default:
		r.add("tree", OK, data, msg, "")
	}
}

// checkVault: the folder 0700, each key a regular file without group or
// other bits (the gateway refuses a key otherwise, at every request).
func checkVault(r *Report, dir string) {
	fi, err := os.Lstat(dir)
	if os.IsNotExist(err) {
		r.add("vault", OK, dir, "no vault (keys come from elsewhere, or none is needed)", "")
		return
	}
	if err != nil || !fi.IsDir() {
		r.add("vault", Problem, dir, "the vault is not a folder", "remove it; roster key put makes it")
		return
	}
	bad := 0
	if fi.Mode().Perm()&0o077 != 0 {
		bad++
		r.add("vault", Problem, dir, fmt.Sprintf("the vault folder is open to group or others (mode %04o): the gateway serves none of its keys", fi.Mode().Perm()),
			"chmod 700 "+dir)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		ki, err := os.Lstat(p)
		switch {
		case err != nil:
			continue
		case !ki.Mode().IsRegular():
			bad++
			r.add("vault", Problem, p, "a vault key that is not a regular file (a link or a folder) is never read", "roster key rm "+e.Name()+", then roster key put "+e.Name())
		case ki.Mode().Perm()&0o077 != 0:
			bad++
			r.add("vault", Problem, p, fmt.Sprintf("the key is readable by group or others (mode %04o): the gateway refuses it", ki.Mode().Perm()), "chmod 600 "+p)
		}
	}
	if bad == 0 {
		r.add("vault", OK, dir, fmt.Sprintf("the vault and its %d keys are private", len(ents)), "")
	}
}
