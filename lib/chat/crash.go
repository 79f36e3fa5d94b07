package chat

import (
	"os"
	"syscall"
)

// testCrash names the point at which the fault tests (cmd/roster-chat)
// have roster-chat kill itself with SIGKILL: "before-file" (a message is
// logged, and acknowledged, but not yet filed), "after-send" (a reply has
// reached the network but its delivery is not yet logged). Unset, as it is
// outside those tests, nothing happens.
var testCrash = os.Getenv("ROSTER_TEST_CRASH")

func crashAt(point string) {
	if testCrash == point {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}
