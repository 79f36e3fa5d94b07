// Command fakemodel is the project's scripted model server (lib/fakemodel)
// as a program, for the demo and for trying an agent by hand without a
// model: it plays the Anthropic Messages and OpenAI chat-completions APIs
// on a loopback address and answers from a script.
//
//	fakemodel --key KEY --script turns.json [--scripts DIR] [--listen 127.0.0.1:0]
//
// --scripts DIR adds every DIR/NAME.json as a script named NAME: a
// conversation follows it when its first user message (the briefing, which
// holds the task's text) has a line "fakemodel-script: NAME", or else when
// its model is NAME (one script per worker, by the model its spec names);
// every other conversation follows --script.
//
// It prints the URL it serves on stdout (one line; use it as a provider's
// upstream or baseUrl), then logs each call as one JSON line on stderr
// (the key is shown only as whether it matched), until SIGINT or SIGTERM.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/roster-sh/roster/lib/fakemodel"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "loopback `address` to listen on")
	key := flag.String("key", "", "the `key` every call must carry (x-api-key or Bearer)")
	script := flag.String("script", "", "the default script: a JSON `file` {\"turns\":[...]}")
	scripts := flag.String("scripts", "", "a `folder` of named scripts, NAME.json each (picked by a task's \"fakemodel-script: NAME\" line, or by model)")
	flag.Parse()
	if err := run(*listen, *key, *script, *scripts); err != nil {
		fmt.Fprintln(os.Stderr, "fakemodel:", err)
		os.Exit(1)
	}
}

func run(listen, key, scriptFile, scriptDir string) error {
	if key == "" || scriptFile == "" {
		return fmt.Errorf("--key and --script are required")
	}
	data, err := os.ReadFile(scriptFile)
	if err != nil {
		return err
	}
	script, err := fakemodel.ParseScript(data)
	if err != nil {
		return err
	}
	ln, err := fakemodel.Listen(listen)
	if err != nil {
		return err
	}
	srv := fakemodel.New(key, script)
	if err := nameScripts(srv, scriptDir); err != nil {
		return err
	}
	srv.OnCall = func(c fakemodel.Call) {
		line, _ := json.Marshal(struct {
			fakemodel.Call
			Key      string `json:"key,omitempty"`
			KeyMatch bool   `json:"key_matched"`
		}{Call: c, KeyMatch: c.Key == key})
		fmt.Fprintf(os.Stderr, "%s\n", line)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("http://%s\n", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { <-ctx.Done(); _ = hs.Shutdown(context.Background()) }()
	if err := hs.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}

// nameScripts adds dir's NAME.json files as named scripts ("" = none).
func nameScripts(srv *fakemodel.Server, dir string) error {
	if dir == "" {
		return nil
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("--scripts %s: no NAME.json in it", dir)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		sc, err := fakemodel.ParseScript(data)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		srv.Name(strings.TrimSuffix(filepath.Base(f), ".json"), sc)
	}
	return nil
}
