package home

import "path/filepath"

// WebToken is roster-web's secret (docs/web.md): made at its first start,
// mode 0600; whoever holds it may use the web console.
func (h Home) WebToken() string { return filepath.Join(h.Dir, "web-token") }
