// Package notify runs org.toml's [notify] on_failure hook: a host command
// run once per run attested failed or ended by its ceiling (systemd's
// OnFailure=, cron's MAILTO), with the run's ids and outcome in its
// environment (docs/dispatch-and-box.md, "Failure notification").
//
// What a reader must know: the hook is the operator's own program, run as
// the supervisor's user on the host, never inside a box. It gets stdin
// from /dev/null and its own process group, and is killed (the whole
// group) at Limit; its output is bounded to the last OutputMax bytes.
// Who runs it: the box's supervisor, right after it attests the run (the
// one process that sees every run end exactly once, with or without a
// dispatcher); the dispatcher only for a task it fails itself (a box lost
// for the third time), which has no supervisor left.
package notify
