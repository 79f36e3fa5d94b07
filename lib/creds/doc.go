// Package creds is the model providers a run's gateway serves and where
// their credentials come from (docs/gateway.md, "Credential sources"):
// org.toml's providers over the built-in ones (OrgProviders), the lookup
// of a provider's key in its sources in order (Lookup: the vault, the
// host's pi login, env:NAME, file:PATH), and the vault's writes (PutVault,
// RemoveVault). lib/gateway injects what Lookup finds; the dispatcher's
// credential hold (lib/tms, ProviderHold) and roster-task key ask the same
// lookup without linking the gateway's HTTP server and TLS client.
//
// Credential sources are tried in order. A vault or file: key open to
// group or others (or a vault folder that is) stops the lookup with
// ErrUnsafeMode rather than falling through to a key the operator did not
// mean; an expired pi OAuth token falls through to the next source and is
// ErrCredentialExpired only when none serves. pi's "!command" keys are not
// run. A credential's value never leaves the caller's memory: it is never
// logged, written or shown.
package creds
