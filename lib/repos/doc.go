// Package repos is everything roster does with git (docs/repos.md): the
// hardened runner of the host's real git, the mirrors of remote repos,
// the pkt-line reading of a push's commands, and the judge of a push's
// ref commands against a worker's [[repo]] grant. It has no HTTP in it:
// lib/gateway routes /git/NAME/... here as it routes model calls to their
// providers.
//
// Every git this package starts runs with no system or global config
// (GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL=/dev/null), an empty HOME, an
// environment of its own (nothing of the supervisor's, whose environment
// may hold keys), an explicit --git-dir, roster's own hooks path, fsck on
// receive and transfer, and no transport but the one roster drives
// (protocol.allow=never, https or loopback http allowed only for a
// mirror's refresh). The host never checks out a work tree and never
// fetches a submodule. A remote's credential reaches git only through its
// environment (GIT_CONFIG_COUNT: an http.<url>.extraHeader), never its
// argv or a file.
package repos
