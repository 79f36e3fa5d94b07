package dispatch

import (
	"os"

	"github.com/fsnotify/fsnotify"
)

// watcher keeps inotify watches on workers/ and on every worker's tasks/
// folder (or, until that exists, on the worker's data folder or the data
// workers folder). Folders, never files: a watch on a file dies at the
// first rename over it, and tasks.json is always replaced by rename.
type watcher struct {
	d  *Dispatcher
	fw *fsnotify.Watcher
	on map[string]bool
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
// go away by themselves.
func (w *watcher) sync() {
	h := w.d.h
	want := []string{h.WorkersDir(), h.DataWorkers()}
	names, _ := w.d.listWorkers()
	for _, n := range names {
		wk := h.Worker(n)
		if isDir(wk.Tasks()) {
			want = append(want, wk.Tasks())
		} else if isDir(wk.Dir) {
			want = append(want, wk.Dir)
		}
	}
	for _, p := range want {
		if w.on[p] && isDir(p) {
			continue
		}
		if err := w.fw.Add(p); err == nil {
			w.on[p] = true
		} else {
			delete(w.on, p)
		}
	}
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
