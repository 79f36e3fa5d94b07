package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/errs"
)

// Exit statuses of `journal --follow` when something outside ends it.
const (
	exitSIGINT  = 130 // 128+SIGINT: docs/tools.md's "interrupted"
	exitSIGTERM = 143 // 128+SIGTERM
	exitSIGPIPE = 141 // 128+SIGPIPE: the reader of stdout went away (as tail -f)
)

// following runs follow(ctx) until it returns or something ends the
// follow from outside: SIGINT (exit 130), SIGTERM (exit 143), or stdout
// being a pipe whose reader closed it (exit 141, quietly). The closed
// pipe is noticed while idle too (poll on stdout reports POLLERR/POLLHUP),
// so `roster-task journal W --follow | head -1` ends when head does, not
// at the next line. A write into the closed pipe meanwhile kills the
// process with SIGPIPE, which the shell also sees as 141.
func following(parent context.Context, stdout any, follow func(context.Context) error) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	code := make(chan int, 1)
	end := func(c int) {
		select {
		case code <- c:
		default: // the first reason wins
		}
		cancel()
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		select {
		case s := <-sigs:
			if s == syscall.SIGTERM {
				end(exitSIGTERM)
			} else {
				end(exitSIGINT)
			}
		case <-ctx.Done():
		}
	}()
	if f, ok := stdout.(*os.File); ok {
		go watchReaderGone(ctx, int(f.Fd()), func() { end(exitSIGPIPE) })
	}
	err := follow(ctx)
	select {
	case c := <-code:
		return &errs.Exit{Code: c}
	default:
	}
	if errors.Is(err, syscall.EPIPE) {
		return &errs.Exit{Code: exitSIGPIPE}
	}
	return err
}

// watchReaderGone calls gone when fd reports POLLERR or POLLHUP (a pipe
// whose read end is closed), until ctx ends. Events 0 asks for nothing
// else; a terminal or a file never reports either while it is usable.
func watchReaderGone(ctx context.Context, fd int, gone func()) {
	for ctx.Err() == nil {
		fds := []unix.PollFd{{Fd: int32(fd)}}
		n, err := unix.Poll(fds, 500)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return
		}
		if n > 0 && fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0 {
			gone()
			return
		}
		if n > 0 && fds[0].Revents&unix.POLLNVAL != 0 {
			return
		}
	}
}
