// Package execproto is the "exec" chat adapter: roster-chat runs an
// operator's bridge program and speaks JSON lines with it, so a bridge to
// any network (Slack, Telegram, Matrix, a folder) is a short script
// (docs/channels.md; an example is contrib/chat-bridge/).
//
// # Running the bridge
//
// An exec account (the org.toml table chat.NAME with protocol = "exec")
// names the program in command = ["/usr/local/bin/my-bridge", "--flag"]:
// it is run as argv (no shell), with roster-chat's environment plus
// ROSTER_CHAT_ACCOUNT=NAME, in its own process group. Its stderr is
// logged, a log line per line (cut at 2 KiB, at most 100 lines per
// 10 s), and so are its exits. When it exits, its process
// group is killed and it is started again after 1 s, doubling up to 60 s;
// the wait starts over at 1 s once it had run for a minute. When
// roster-chat stops, the bridge's stdin is closed and its group gets
// SIGTERM, then SIGKILL 5 s later. A bridge must exit when its stdin
// ends (roster-chat may have been killed), and must keep reading its
// stdin: one that leaves it unread for 10 s is killed and restarted.
//
// # The lines
//
// Each line is one JSON object ending in "\n", at most MaxLine bytes
// (1 MiB + 64 KiB); its "type" says what it is. Fields not listed are
// ignored. A line that is not valid (not JSON, an unknown type, a missing
// or empty required field, a field over 1 KiB or holding a control
// character, a line too long) is logged without its text and skipped:
// nothing a bridge prints stops the adapter.
//
// The bridge prints on its stdout:
//
//	{"type":"hello","nick":"dobby"}
//		optional, best printed first: the name the account is seen as in rooms
//		(a message naming it mentions the worker). Without one the nick
//		is the account's NAME; the last hello printed wins.
//	{"type":"message","id":"…","chat":"…","from":"…","from_verified":true,"text":"…"}
//		a message received. Required: id (the network's id of the
//		message, unique within the account: the record files a message
//		once per id), chat (where it was said and where replies go: for
//		a DM the sender's address, for a room the room's), from (the
//		sender's identity) and text (as is; the record cuts it at
//		64 KiB). Optional: "from_verified": true only where the network
//		authenticated the sender (default false); "room": true for a
//		room (default false: a DM); "at": when it was sent, an RFC 3339
//		time ("2026-05-01T09:30:00Z"; default: when it is taken);
//		"history": true for a message replayed from the network's
//		history after a reconnect.
//	{"type":"sent","ref":"…","id":"…"}
//		the answer to a send line: it went out with the network id id
//		(optional: where the network has none, the adapter makes one).
//	{"type":"error","ref":"…","error":"…"}
//		the answer to a send line: it did not go out, and why (roster-chat
//		retries later). Without ref, a complaint that is only logged.
//
// roster-chat writes on the bridge's stdin:
//
//	{"type":"send","chat":"…","text":"…","ref":"…"}
//		send text to chat; the bridge answers with sent or error naming
//		ref (within 30 s, or the send fails and is retried). text is as
//		roster-chat has it (any Unicode, newlines included): the bridge
//		makes it safe for its network. Sends may be written before
//		earlier ones are answered.
//	{"type":"ack","id":"…"}
//		the message id is durable in the record: only now may the bridge
//		acknowledge it to its network (mark it read, delete it from a
//		queue). A message that is not acked (roster-chat could not take
//		it, or stopped first) should be printed again later; the record
//		files each id once, so printing a message twice is harmless.
//
// # Identities
//
// An identity that is not verified always starts with "~", so that it can
// never equal an owner (owners are verified identities without "~"): the
// adapter prefixes "~" to from when from_verified is false and from does
// not start with "~" already, and refuses a line with from_verified true
// and a from starting with "~". chat is passed as is: a bridge whose
// network has unverified senders should give their DMs chats that
// cannot be taken for a verified sender's.
//
// # Order and concurrency
//
// Messages are delivered one at a time in the order printed (up to 16
// are read ahead); answers to sends are read meanwhile. Send is safe for
// concurrent use; a line is one write, so lines never interleave. Send
// fails at once (ErrNotRunning) while the bridge is not running.
package execproto
