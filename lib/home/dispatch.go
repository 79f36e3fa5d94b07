package home

import "path/filepath"

// SupervisorLog is where the dispatcher sends the stdout and stderr of a
// `roster-box run` it starts detached (the box's own output goes to
// transcript.log).
func SupervisorLog(runDir string) string { return filepath.Join(runDir, "supervisor.log") }

// ExecLog is a run's record of the commands `roster-box exec` ran inside
// its box (JSON Lines, appended).
func ExecLog(runDir string) string { return filepath.Join(runDir, "exec.jsonl") }
