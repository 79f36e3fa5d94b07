// Package fsx holds the few filesystem operations every roster write goes
// through: atomic durable replace, durable JSON Lines append, flock with a
// bound, and safe opening of anything a box can write.
//
// Invariants: a replaced file is fsynced, renamed over the old one and its
// folder fsynced, so a crash leaves the old or the new file, never a torn
// one. Nothing here follows a symlink or blocks on a FIFO in a folder a box
// can write.
package fsx
