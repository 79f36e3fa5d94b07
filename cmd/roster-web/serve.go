package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/signal"
	"syscall"
	"time"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/web"
)

// ServeCmd is `roster-web serve`.
type ServeCmd struct {
	Listen  string   `name:"listen" default:"127.0.0.1:8790" placeholder:"ADDR" help:"Where to listen, HOST:PORT (port 0: any free one). Loopback only unless --tls-cert and --tls-key are given."`
	TLSCert string   `name:"tls-cert" placeholder:"FILE" help:"A PEM certificate: serve HTTPS (required for a non-loopback --listen)."`
	TLSKey  string   `name:"tls-key" placeholder:"FILE" help:"The certificate's PEM private key."`
	Host    []string `name:"host" placeholder:"NAME" help:"Also accept requests whose Host header is NAME[:PORT] (repeatable; e.g. the name a certificate is for). Any other Host is refused."`
	JSON    bool     `name:"json" help:"Print the listening address and login URL as one JSON object instead of a line."`
}

func (c *ServeCmd) Run(g *cli.Globals, env *cli.Env) error {
	h, err := g.OpenHome()
	if err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return errs.New(errs.ErrUsage, fmt.Sprintf("--listen %q: give HOST:PORT (%v)", c.Listen, err))
	}
	tls := c.TLSCert != "" || c.TLSKey != ""
	if tls && (c.TLSCert == "" || c.TLSKey == "") {
		return errs.New(errs.ErrUsage, "--tls-cert and --tls-key go together")
	}
	if !loopback(host) && !tls {
		return errs.WithHint(errs.New(errs.ErrUsage, fmt.Sprintf("--listen %s is not a loopback address: the console would be reachable from the network in clear text", c.Listen)),
			"give --tls-cert and --tls-key, or listen on 127.0.0.1 and reach it through ssh -L")
	}
	tok, made, err := web.LoadToken(h)
	if err != nil {
		return err
	}
	if made {
		env.Note("made %s (mode 0600): whoever holds it may use the console", h.WebToken())
	}
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	hosts := append(web.LoopbackHosts(addr), c.Host...)
	srv, err := web.New(web.Config{Home: h, Token: tok, Hosts: hosts, TLS: tls})
	if err != nil {
		ln.Close()
		return err
	}
	scheme := "http"
	if tls {
		scheme = "https"
	}
	login := fmt.Sprintf("%s://%s/login?code=%s", scheme, addr, srv.LoginCode())
	if c.JSON {
		b, _ := json.Marshal(map[string]string{"listen": addr, "login": login})
		fmt.Fprintf(env.Stdout, "%s\n", b)
	} else {
		fmt.Fprintln(env.Stdout, login)
	}
	return serve(env.Ctx, ln, srv, c.TLSCert, c.TLSKey)
}

// serve serves until SIGINT or SIGTERM, then lets requests under way
// finish (5 s at most; a live run's event stream is cut).
func serve(ctx context.Context, ln net.Listener, h http.Handler, cert, key string) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	errc := make(chan error, 1)
	go func() {
		if cert != "" {
			errc <- hs.ServeTLS(ln, cert, key)
		} else {
			errc <- hs.Serve(ln)
		}
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
