// Package snap takes, compares, lists, restores and prunes the snapshots
// of a worker's store and channel stores.
//
// A snapshot is a folder store-snapshots/ID holding the trees' copy, its
// manifest and its change list; it appears only by the rename of a
// finished .partial-ID folder, and a file unchanged since the previous
// snapshot is a hardlink to that snapshot's inode, never to a live one.
// Take, restore and prune hold the worker's store lock exclusively
// throughout; ls and diff read without it. A restore takes a pre-restore
// snapshot (its undo), stages each tree beside the live one and swaps them
// in with renameat2.
package snap
