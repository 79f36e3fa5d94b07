package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os/exec"
	"syscall"
	"time"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/suite"
)

// serveChat runs `roster-chat serve` beside the loop while ctx lives
// (docs/channels.md: `roster server start` starts it when org.toml has a
// chat account): restarted with backoff when it exits, stopped with
// SIGTERM (then SIGKILL after 10 s) when the loop stops. One that exits
// 11 (another serve holds data/chat/serve.lock, e.g. a systemd unit) is
// left to that one.
func serveChat(ctx context.Context, h home.Home, stderr io.Writer, log *slog.Logger) {
	prog, err := suite.Find("roster-chat")
	if err != nil {
		log.Error("chat accounts are configured but roster-chat is not found: no chat is served", "err", err)
		return
	}
	wait := time.Second
	for ctx.Err() == nil {
		start := time.Now()
		cmd := exec.Command(prog, "--home", h.Dir, "serve")
		cmd.Stdout, cmd.Stderr = stderr, stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			log.Error("roster-chat serve not started", "err", err)
		} else {
			log.Info("roster-chat serve started", "pid", cmd.Process.Pid)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err = <-done:
			case <-ctx.Done():
				_ = cmd.Process.Signal(syscall.SIGTERM)
				select {
				case <-done:
				case <-time.After(10 * time.Second):
					_ = cmd.Process.Kill()
					<-done
				}
				log.Info("roster-chat serve stopped")
				return
			}
			var ee *exec.ExitError
			if errors.As(err, &ee) && ee.ExitCode() == errs.ExitBusy {
				log.Info("another roster-chat serve runs for this home: leaving chat to it")
				return
			}
			log.Warn("roster-chat serve exited; starting it again", "err", err, "in", wait.String())
		}
		if time.Since(start) > time.Minute {
			wait = time.Second
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(wait*2, time.Minute)
	}
}
