// Package config reads the settings people write: org.toml and the worker
// specs workers/NAME.toml (docs/layout.md).
//
// Both are parsed strictly: an unknown key, a value of the wrong type or an
// invalid value is refused (errs.ErrRefused, exit 14) with an error that
// names the file, the line and the key, so that a typo never falls back to a
// default silently. A missing org.toml means every default; a missing
// worker spec means there is no such worker (errs.ErrNoHome, exit 10).
// Settings that are allowed but dangerous come back as Warnings, for each
// program to print once when it loads them.
package config
