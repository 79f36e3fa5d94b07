// Package transcript reads a run's transcript.log as a conversation.
//
// An agent's headless run writes its events to the box's stdout, one JSON
// object a line: pi's (--mode json and --mode rpc: message_end for each
// user, assistant and tool-result message) and Claude Code's (stream-json:
// system, assistant, user and result). A Reader turns those lines into
// Entries — what the user said, the assistant's text, each tool call with
// its arguments, each tool result, errors — and passes every other line
// (stderr, a plain command's output, roster's own notes) through as a
// "raw" entry, so nothing in the file is hidden. Events that only repeat
// what a later event says whole (pi's message_start and message_update,
// its tool_execution_* beside the toolResult message, turn_end,
// agent_end) are left out.
//
// The Reader streams: it holds one line at a time, at most MaxLine bytes
// of it (a longer line becomes one raw entry saying how long it was), so a
// 64 MiB transcript is rendered without being loaded. Text renders entries
// for a terminal, cutting tool results and long prompts; the JSON form
// keeps every entry whole.
package transcript
