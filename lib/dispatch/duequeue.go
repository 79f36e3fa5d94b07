package dispatch

import (
	"container/heap"
	"time"
)

// dueQueue holds each cached worker's next instant (workerState.next: a
// template's activation, a scheduled_at, a heartbeat, a held or unreadable
// worker's re-check), earliest first, so a tick finds the workers that are
// due without looking at the others, and the loop knows how long to
// sleep. One entry per worker: setting a worker's instant again moves its
// entry.
type dueQueue struct {
	items []*dueItem
	at    map[string]*dueItem
}

type dueItem struct {
	w   string
	t   time.Time
	pos int
}

// set makes t worker w's instant; the zero time removes it.
func (q *dueQueue) set(w string, t time.Time) {
	if q.at == nil {
		q.at = map[string]*dueItem{}
	}
	it := q.at[w]
	switch {
	case t.IsZero() && it != nil:
		heap.Remove(q, it.pos)
		delete(q.at, w)
	case t.IsZero():
	case it != nil:
		it.t = t
		heap.Fix(q, it.pos)
	default:
		it = &dueItem{w: w, t: t}
		q.at[w] = it
		heap.Push(q, it)
	}
}

// due returns the workers whose instant is at or before now (leaving
// them queued: their evaluation sets their next instant).
func (q *dueQueue) due(now time.Time, out []string) []string {
	// The heap's order is partial: walk it from the root, descending only
	// into children that are due themselves.
	var walk func(i int)
	walk = func(i int) {
		if i >= len(q.items) || now.Before(q.items[i].t) {
			return
		}
		out = append(out, q.items[i].w)
		walk(2*i + 1)
		walk(2*i + 2)
	}
	walk(0)
	return out
}

// next is the earliest instant queued, or the zero time.
func (q *dueQueue) next() time.Time {
	if len(q.items) == 0 {
		return time.Time{}
	}
	return q.items[0].t
}

// heap.Interface.
func (q *dueQueue) Len() int           { return len(q.items) }
func (q *dueQueue) Less(i, j int) bool { return q.items[i].t.Before(q.items[j].t) }
func (q *dueQueue) Swap(i, j int) {
	q.items[i], q.items[j] = q.items[j], q.items[i]
	q.items[i].pos, q.items[j].pos = i, j
}
func (q *dueQueue) Push(x any) {
	it := x.(*dueItem)
	it.pos = len(q.items)
	q.items = append(q.items, it)
}
func (q *dueQueue) Pop() any {
	n := len(q.items)
	it := q.items[n-1]
	q.items[n-1] = nil
	q.items = q.items[:n-1]
	return it
}
