// Package suite finds the suite's other programs the way git finds its
// commands: $ROSTER_EXEC_PATH, then the folder of the running executable,
// then PATH. roster, roster-dispatch and roster-box all look them up here,
// so an installed suite and a fresh bin/ both work.
package suite
