// Package doctor checks a host and a roster home and says what is wrong,
// with the fix for each (roster doctor; roster-task(1), doctor).
//
// Each check adds Findings: "ok" for what was checked and is fine,
// "warning" for what works but should be looked at, "problem" for what
// stops boxes, runs, pushes or chats. The checks are:
//
//   - host: root, cgroups (v2 controllers or v1 hierarchies: memory and
//     pids needed, cpu for host_cpus), the namespaces and seccomp a box
//     needs, inotify limits for the number of workers;
//   - tree: the data tree's filesystem (NFS, FUSE, CIFS refused: flock and
//     rename are not to be trusted there), free space and inodes, the
//     modes of data/, the vault and its keys;
//   - config: org.toml and every worker spec, every problem at once with
//     its file and line, and their warnings;
//   - workers: per worker, the agent on the box's PATH, a model credential
//     in reach for its providers, git where a repo is granted;
//   - chat: each account's credential and whether its server answers;
//   - generated: /run/roster/etc-* folders no box uses any more (Clean
//     removes them).
//
// Nothing here prints a credential: a finding names sources and files.
package doctor
