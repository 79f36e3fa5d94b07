package repos

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
)

// JudgeFDEnv names the descriptor a pre-receive hook reaches the judge
// on: one end of a socket pair the gateway gave `git receive-pack`, so no
// path to it exists anywhere (the gateway's own socket folder is mounted
// into the box).
const JudgeFDEnv = "ROSTER_GIT_JUDGE_FD"

// hookRequest is what the hook sends the judge: the ref updates git is
// about to make and where the pushed objects wait (git's quarantine).
type hookRequest struct {
	Commands []Command         `json:"commands"`
	Env      map[string]string `json:"env"`
}

// hookAnswer is the judge's verdict: ok lets git move the refs; the
// lines are printed to the client as "remote: roster: ...".
type hookAnswer struct {
	OK    bool     `json:"ok"`
	Lines []string `json:"lines"`
}

// quarantineVars are the variables git gives a pre-receive hook that
// make the quarantined objects readable.
var quarantineVars = []string{"GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_QUARANTINE_PATH"}

// HookMain is roster's pre-receive hook (`roster-box git-hook
// pre-receive`, run by git receive-pack): it hands git's ref updates to
// the judge in the gateway and prints its answer. Exit 0 lets the push
// land; 1 refuses it whole.
func HookMain(stdin io.Reader, stderr io.Writer) int {
	fd, err := strconv.Atoi(os.Getenv(JudgeFDEnv))
	if err != nil || fd < 3 {
		fmt.Fprintln(stderr, "roster: this hook runs only under roster's gateway")
		return 1
	}
	var req hookRequest
	req.Env = map[string]string{}
	for _, v := range quarantineVars {
		req.Env[v] = os.Getenv(v)
	}
	sc := bufio.NewScanner(stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			fmt.Fprintln(stderr, "roster: unexpected pre-receive input")
			return 1
		}
		req.Commands = append(req.Commands, Command{Old: f[0], New: f[1], Ref: f[2]})
	}
	conn, err := net.FileConn(os.NewFile(uintptr(fd), "judge"))
	if err != nil {
		fmt.Fprintln(stderr, "roster: the judge is not reachable:", err)
		return 1
	}
	defer conn.Close()
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		fmt.Fprintln(stderr, "roster: the judge is not reachable:", err)
		return 1
	}
	var ans hookAnswer
	if err := json.NewDecoder(conn).Decode(&ans); err != nil {
		fmt.Fprintln(stderr, "roster: no verdict from the judge:", err)
		return 1
	}
	for _, l := range ans.Lines {
		fmt.Fprintln(stderr, "roster: "+l)
	}
	if !ans.OK {
		return 1
	}
	return 0
}
