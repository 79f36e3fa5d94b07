package home

import "path/filepath"

// Names inside a worker's snapshot folder (docs/store.md, "Snapshots"). lib/snap
// works relative to open folder handles, so it needs the names, not paths.
const (
	SnapStoreDir         = StoreDir         // ID/store/: the store tree
	SnapChannelStoresDir = ChannelStoresDir // ID/channel-stores/<encoded>/
	SnapManifest         = "manifest.jsonl" // ID/manifest.jsonl
	SnapChanges          = "changes.txt"    // ID/changes.txt
	SnapPartialPrefix    = ".partial-"      // .partial-ID/: under construction
	SnapTrash            = ".trash"         // .trash/: being deleted
	SnapPinned           = ".pinned"        // .pinned/ID: an empty file per pinned snapshot
	SnapFailed           = ".take-failed"   // .take-failed: why the last take failed (JSON); gone once one succeeds
	SnapChecked          = ".checked.jsonl" // .checked.jsonl: the manifests prune found sound, by stat (a cache)
	StoreLocksName       = ".locks"         // the store's lock-folder mount point
	StoreLockName        = "store"          // the whole-store lock in locks/
	RestorePrefix        = ".restore-"      // W/.restore-*: a restore's staging trees
)

// SnapRestoreChanges is, in a pre-restore snapshot ID, the change list of
// the restore that took it (ID/restore-changes.txt).
const SnapRestoreChanges = "restore-changes.txt"

// Snapshot is the folder of one complete snapshot.
func (w Worker) Snapshot(id string) string { return filepath.Join(w.Dir, SnapshotsDir, id) }

// SnapshotManifest is a complete snapshot's manifest.
func (w Worker) SnapshotManifest(id string) string {
	return filepath.Join(w.Dir, SnapshotsDir, id, SnapManifest)
}

// SnapshotChanges is a complete snapshot's change list.
func (w Worker) SnapshotChanges(id string) string {
	return filepath.Join(w.Dir, SnapshotsDir, id, SnapChanges)
}
