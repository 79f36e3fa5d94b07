package dispatch

import (
	"errors"
	"os"
	"strings"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"
)

// watcher keeps inotify watches on workers/ and on every worker's tasks/
// folder (or, until that exists, on the worker's data folder or the data
// workers folder). Folders, never files: a watch on a file dies at the
// first rename over it, and tasks.json is always replaced by rename.
type watcher struct {
	d  *Dispatcher
	fw *fsnotify.Watcher
	on map[string]bool
	// warned: the inotify limit was logged (folders that could not be
	// watched are Dispatcher.unwatched, polled at every tick).
	warned bool
}

// newFSWatcher makes the fsnotify watcher; a test makes it fail as a host
// out of inotify instances would, to check the fallback to polling.
var newFSWatcher = fsnotify.NewWatcher

func newWatcher(d *Dispatcher) (*watcher, error) {
	fw, err := newFSWatcher()
	if err != nil {
		return nil, err
	}
	w := &watcher{d: d, fw: fw, on: map[string]bool{}}
	w.sync()
	go func() { // an error (queue overflow) means events were lost: read everything again
		for range fw.Errors {
			d.lost.Store(true)
			d.wake()
		}
	}()
	return w, nil
}

func (w *watcher) events() <-chan fsnotify.Event { return w.fw.Events }

func (w *watcher) close() { w.fw.Close() }

// sync adds watches for folders that appeared; watches on removed folders
// go away by themselves. A folder that cannot be watched for want of
// inotify watches (ENOSPC) is logged once, with how to raise the limit,
// and its worker is polled instead (Dispatcher.unwatched).
func (w *watcher) sync() {
	h := w.d.h
	type want struct{ path, worker string }
	wants := []want{{h.WorkersDir(), ""}, {h.DataWorkers(), ""}, {h.Vault(), ""}}
	names, _ := w.d.listWorkers()
	for _, n := range names {
		wk := h.Worker(n)
		if isDir(wk.Tasks()) {
			wants = append(wants, want{wk.Tasks(), n})
		} else if isDir(wk.Dir) {
			wants = append(wants, want{wk.Dir, n})
		}
	}
	unwatched := map[string]bool{}
	for _, p := range wants {
		if w.on[p.path] && isDir(p.path) {
			continue
		}
		err := addWatch(w.fw, p.path)
		if err == nil {
			w.on[p.path] = true
			continue
		}
		delete(w.on, p.path)
		if errors.Is(err, unix.ENOSPC) {
			if p.worker != "" {
				unwatched[p.worker] = true
			}
			if !w.warned {
				w.warned = true
				w.d.log.Warn("out of inotify watches: the workers not watched are polled instead (raise the limit: sysctl fs.inotify.max_user_watches=N, one per worker and a few more; docs/dispatch-and-box.md \"At scale\")",
					"limit", readLimit("/proc/sys/fs/inotify/max_user_watches"), "folder", p.path)
			}
		}
	}
	w.d.unwatched = unwatched
}

// addWatch adds one watch; a test makes it run out as a host out of
// inotify watches would.
var addWatch = func(fw *fsnotify.Watcher, path string) error { return fw.Add(path) }

// readLimit is a /proc/sys value, or "" when it cannot be read.
func readLimit(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
