// Package chat is roster-chat's work between chat networks and the data
// tree (docs/channels.md): the conversation records, intake of inbound
// messages as relay tasks, and delivery of the workers' replies.
//
// Record is one conversation's record, data/workers/W/conversations/CHAN:
// an append-only log, changed only under the record's lock (flock) and
// fsynced before the lock is released, and the truth about the
// conversation. Service runs the Adapters (one per chat account, each
// holding nothing but its connection) and moves messages each way: an
// inbound message is logged first, acknowledged to its network only once
// durable (Deliver returns nil), then filed as a relay task; a reply is
// sent from the worker's outbox and logged sent. Service holds no truth
// of its own: at start it rebuilds from the records (Recover), so a
// crashed roster-chat loses nothing it acknowledged. Pairing lets a
// stranger's sender in by a code approved by hand.
package chat
