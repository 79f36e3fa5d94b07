// Package jsonw writes JSON strings byte for byte as encoding/json does,
// without reflection, allocation or linking encoding/json: for the few
// lines written on a hot path (the gateway's ledger) or by a program
// whose start-up must not pay for encoding/json's initialisation
// (roster-lock). FuzzAppendString holds it to encoding/json.
package jsonw
