// Package home is the only code that knows paths in a roster home and its
// data tree (docs/layout.md), the name rules, and the id formats.
//
// Nothing else joins path strings for the data tree: every program asks a
// Home or a Worker for the path it needs.
package home
