// Package outbox is how a box speaks to the host (docs/dispatch-and-box.md,
// "Actions"): the action file format, the in-box writer used by roster-task
// and the host reader used by the supervisor.
//
// The outbox is a maildir. The writer claims a number N by creating
// tmp/N.claim with O_EXCL (claims are never removed, so N is unique within
// the run), writes tmp/N.json, renames it to new/N.json with
// RENAME_NOREPLACE, and waits for done/N.json. The host reads new/ through
// a descriptor of the folder it made (a box cannot swap it: outbox/ is
// root-owned 0755, tmp/ and new/ root-owned 1733, done/ root-owned 0755),
// opens each entry with openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS) and
// O_NONBLOCK, regular files of at most MaxActionSize only, answers in
// done/N.json and removes the entry. Everything in new/ is hostile.
//
// This package is pure Go: roster-task (static) links it.
package outbox
