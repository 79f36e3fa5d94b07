// Package fakemodel is the project's scripted model server: the one
// stand-in roster's tests allow (docs/agents.md, "Tests"). It plays a model
// provider's API on 127.0.0.1 for a real agent CLI, following a script.
//
// It speaks the Anthropic Messages API (POST /v1/messages, streamed as
// server-sent events or answered as one JSON body) and OpenAI chat
// completions (POST /v1/chat/completions, streamed or not), both with
// usage. Every call is checked against the key the server expects
// (x-api-key, or Authorization: Bearer) and answered 401 in the provider's
// error shape when it differs, and recorded (the key seen, the path, the
// model, the usage answered) for a test to assert on.
//
// The script is stateless per conversation: the turn answered is the
// number of assistant messages in the request's history, so the first call
// gets turn 0, the call that carries turn 0's tool result gets turn 1, and
// a client's retry of a call gets the same turn again. Past the script's
// end the answer is a final text saying so.
package fakemodel
