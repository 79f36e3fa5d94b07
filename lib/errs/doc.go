// Package errs holds the error kinds every roster program maps to an exit code.
//
// lib packages wrap one of these sentinels (fmt.Errorf("...: %w", errs.ErrNotFound))
// and never print or exit; Code turns the kind into the exit code of
// docs/tools.md in one switch. WithHint attaches the "hint:" line a person sees.
package errs
