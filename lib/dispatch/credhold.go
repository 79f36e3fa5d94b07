package dispatch

// The per-worker holds: a worker whose spec cannot start a box
// (tms.SpecHold: no command, its agent not installed, a connection's path
// missing) is held exactly like one without a credential, until the spec,
// the agent or the path is fixed; so is one whose store was over [storage]
// store.max at its last take (tms.StoreHold), until a take finds it under
// the bound.
//
// The per-worker credential hold (docs/gateway.md, "Dispatch hold"): a
// worker whose boxes get a gateway and whose [gateway] providers have no
// credential in reach (tms.ProviderHold, computed by its Due) is held: its
// tasks stay pending, the hold is logged once when it starts and once when
// it ends; a held worker is evaluated again on a change of its own, a
// change of the vault, or every HoldRecheck (10 s: pi's login file is not
// watched), so a credential put in the vault is claimed for at the next
// tick and one appearing elsewhere within HoldRecheck. A worker with no provider, or
// whose box has no gateway, is never held for credentials. Credentials
// are looked up in the dispatcher's environment, which its supervisors
// inherit; no key is ever logged.

// noteHold logs worker ws's hold when it starts and when it ends, as the
// tick evaluates it (holds change only then); d.credHeld is the workers
// held now and why. A worker the dispatcher no longer claims for (paused,
// not served, unreadable) leaves it quietly.
func (d *Dispatcher) noteHold(ws *workerState) {
	if d.credHeld == nil {
		d.credHeld = map[string]string{}
	}
	was, wasHeld := d.credHeld[ws.name]
	switch {
	case !ws.claims || ws.broken:
		delete(d.credHeld, ws.name)
	case ws.credHold == "" && wasHeld:
		d.log.Info("worker hold ended", "worker", ws.name, "was", was)
		delete(d.credHeld, ws.name)
	case ws.credHold != "" && !wasHeld:
		d.log.Warn("worker held: claiming nothing for it", "worker", ws.name, "why", ws.credHold)
		d.credHeld[ws.name] = ws.credHold
	case ws.credHold != "":
		d.credHeld[ws.name] = ws.credHold
	}
}
