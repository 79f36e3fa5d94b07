package home

import "path/filepath"

// ConversationsDir holds a worker's conversation records, one folder per
// channel, percent-encoded as channel stores (docs/channels.md).
const ConversationsDir = "conversations"

// Conversations is the folder of the worker's conversation records.
func (w Worker) Conversations() string { return filepath.Join(w.Dir, ConversationsDir) }

// Conversation is the folder of one channel's record; channel is the
// channel name (not encoded).
func (w Worker) Conversation(channel string) (string, error) {
	enc, err := EncodeChannel(channel)
	if err != nil {
		return "", err
	}
	return filepath.Join(w.Dir, ConversationsDir, enc), nil
}

// ChatDir holds roster-chat's own state: pairing codes, its lock.
func (h Home) ChatDir() string { return filepath.Join(h.Dir, "data", "chat") }
