// Command fakemodel is the project's scripted model server (lib/fakemodel)
// as a program, for the demo and for trying an agent by hand without a
// model: it plays the Anthropic Messages and OpenAI chat-completions APIs
// on a loopback address and answers from a script.
//
//	fakemodel --key KEY --script turns.json [--listen 127.0.0.1:0]
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
	"syscall"
	"time"

	"github.com/roster-sh/roster/lib/fakemodel"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "loopback `address` to listen on")
	key := flag.String("key", "", "the `key` every call must carry (x-api-key or Bearer)")
	script := flag.String("script", "", "the script: a JSON `file` {\"turns\":[...]}")
	flag.Parse()
	if err := run(*listen, *key, *script); err != nil {
		fmt.Fprintln(os.Stderr, "fakemodel:", err)
		os.Exit(1)
	}
}

func run(listen, key, scriptFile string) error {
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
