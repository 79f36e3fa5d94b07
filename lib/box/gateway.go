package box

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/roster-sh/roster/lib/home"
)

// In-box places of the gateway (docs/gateway.md): the socket the
// supervisor serves, and the port pid 1 relays to it.
const (
	BoxGatewayDir  = "/run/roster"
	BoxGatewaySock = BoxGatewayDir + "/gateway.sock"
	BoxGatewayAddr = "127.0.0.1:3128"
	BoxGatewayURL  = "http://" + BoxGatewayAddr
)

// gatewayDir is the host folder holding a run's gateway socket: outside
// the data tree (the runs/ history is mounted into every box of the
// worker), under the root-only container root, mounted at /run/roster in
// this run's box only.
func gatewayDir(run string) string { return home.GatewayDir(run) }

// RemoveGatewayDir deletes a run's gateway folder (after the run, or by reap).
func RemoveGatewayDir(run string) error { return os.RemoveAll(gatewayDir(run)) }

// listenGateway makes the run's gateway folder and listens on its socket,
// which only the box user may connect to.
func listenGateway(s *Spec) (string, net.Listener, error) {
	dir := gatewayDir(s.Run)
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return "", nil, err
	}
	os.RemoveAll(dir) // a leftover from a crashed attempt of the same run
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", nil, err
	}
	sock := filepath.Join(dir, "gateway.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		return "", nil, err
	}
	l.(*net.UnixListener).SetUnlinkOnClose(true)
	if err = os.Chown(sock, s.UID, s.UID); err == nil {
		err = os.Chmod(sock, 0o600)
	}
	if err != nil {
		l.Close()
		return "", nil, fmt.Errorf("gateway socket: %w", err)
	}
	return sock, l, nil
}

// gatewayEnv is what a gateway box's environment gains (docs/gateway.md):
// the proxy variables pointing at the relay; the providers' base URLs and
// placeholder keys come from the caller in Spec.Env.
func gatewayEnv() []string {
	return []string{
		"HTTP_PROXY=" + BoxGatewayURL, "HTTPS_PROXY=" + BoxGatewayURL,
		"http_proxy=" + BoxGatewayURL, "https_proxy=" + BoxGatewayURL,
		"NO_PROXY=localhost,127.0.0.1", "no_proxy=localhost,127.0.0.1",
		"ROSTER_GATEWAY=" + BoxGatewayURL,
	}
}

// BoxKnowledge is where the box finds its knowledge repo's main as git
// objects (a folder in the run's gateway folder: main, objects/pack):
// pid 1 makes ~/knowledge from them.
const BoxKnowledge = BoxGatewayDir + "/knowledge"

// writeKnowledgeObjects starts writing the run's knowledge objects into
// its gateway folder, beside the container's set-up (launch waits for
// them before the box's command may start: KnowledgeObjects and
// knowledgeDone in s). A failure is said on stderr; pid 1 then finds
// none and clones through the gateway instead.
func writeKnowledgeObjects(s *Spec, gw Gateway) {
	ko, ok := gw.(interface {
		KnowledgeObjects(ctx context.Context, dir string) error
	})
	if s.Knowledge == "" || !ok {
		return
	}
	done := make(chan struct{})
	s.KnowledgeObjects, s.knowledgeDone = true, done
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := ko.KnowledgeObjects(ctx, filepath.Join(gatewayDir(s.Run), filepath.Base(BoxKnowledge))); err != nil {
			fmt.Fprintf(os.Stderr, "roster-box: run %s: %v (the box clones its knowledge through the gateway)\n", s.Run, err)
		}
	}()
}
