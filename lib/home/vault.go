package home

import "path/filepath"

// Vault is $ROSTER_HOME/vault/: one root-owned 0600 file per provider
// holding its model key, in a root-owned 0700 folder (docs/gateway.md).
func (h Home) Vault() string { return filepath.Join(h.Dir, "vault") }
