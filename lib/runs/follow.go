package runs

import (
	"context"
	"errors"
	"io"
	"os"
	"time"

	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
)

// startGrace is how long a run folder may exist without box.json before a
// follower decides its supervisor never started (the dispatcher's reclaim
// uses the same 30 s).
const startGrace = 30 * time.Second

// Finished reports whether the run in runDir is over: run.json records its
// end, or its supervisor is gone (box.json names a dead process, or never
// appeared within 30 s of the folder's creation).
func Finished(runDir string) bool {
	if r, err := ReadRecord(runDir); err == nil && r.Ended != "" {
		return true
	}
	b, err := ReadBoxInfo(runDir)
	if err == nil {
		return !b.Alive()
	}
	fi, err := os.Stat(runDir)
	return err != nil || time.Since(fi.ModTime()) > startGrace
}

// Follow copies runDir's transcript.log to w and keeps copying what is
// appended (tail -f) until the run is Finished, then copies the rest and
// returns. poll is how often it looks (0: 200 ms).
func Follow(ctx context.Context, runDir string, w io.Writer, poll time.Duration) error {
	if poll <= 0 {
		poll = 200 * time.Millisecond
	}
	var f *os.File
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	for {
		done := Finished(runDir) // decided before the copy, so nothing written before the end is missed
		if f == nil {
			var err error
			f, err = fsx.OpenRegular(home.Transcript(runDir))
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		if f != nil {
			if _, err := io.Copy(w, f); err != nil {
				return err
			}
		}
		if done {
			return nil
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
