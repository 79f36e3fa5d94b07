// Package sched computes template activations under roster's time rules.
//
// It is pure: no files, no locks, no printing, no clock of its own (the
// caller passes now). A Schedule is parsed from a template's cron spec;
// robfig/cron/v3 only parses it (five fields, or @hourly, @daily,
// @midnight, @weekly, @monthly, @yearly, @annually, @every DUR). The
// activations are computed here, in the schedule's zone: the host's local
// zone, or the one a "CRON_TZ=Zone " (or "TZ=Zone ") prefix names. A spec
// that does not parse is an errs.ErrUsage error with the parser's message;
// Parse recovers from any panic in the parser.
//
// The daylight-saving rules of docs/tasks.md:
//
//   - Spring-forward gap: an activation whose local wall time does not exist
//     fires once, at the first instant after the gap (the transition
//     itself): New York 2026-03-08 "30 2 * * *" fires at 03:00 EDT (07:00Z);
//     Sao Paulo 2018-11-04 "0 0 * * *" fires at 01:00 BRST. Several
//     nonexistent wall times ("*/20 2 * * *") collapse into that one
//     instant, which fires once.
//   - Fall-back overlap: a wall time that occurs twice fires once, at its
//     first occurrence, when the hour field is fixed: a number, a list or a
//     range without a step ("1", "1,13", "1-5"), and @daily, @midnight,
//     @weekly, @monthly, @yearly. When the hour field holds "*", "?" or a
//     step ("*/2", "1/2", "1-5/2"), and for @hourly and @every, the spec
//     follows elapsed time and fires at both occurrences: "0 * * * *" fires
//     at 01:00 EDT and at 01:00 EST, every real hour.
//   - @every DUR counts elapsed time from the Unix epoch: its activations
//     are the instants that are whole multiples of DUR since
//     1970-01-01T00:00:00Z, whatever the zone and whatever the cursor. They
//     depend on the spec alone, so a restart or a cursor written at any
//     instant can never shift them (@every 30m fires at :00 and :30 UTC;
//     @every 7h at multiples of 7h since the epoch). DUR must be a whole
//     number of seconds, at least 1s; a template that wants a wall-clock
//     time of day uses a five-field spec instead.
//
// A Preview marks each activation with the case it falls in: MarkGap (the
// wall time did not exist), MarkOverlapFirst (the first of two occurrences),
// MarkOverlapRepeat (the second, fired only by elapsed-time specs).
//
// Plan decides what a template does at now from its cursor, the UTC time of
// the last activation it dealt with; see Plan for catch_up and window. The
// decisions the spec left open:
//
//   - A zero cursor fires nothing and returns now (truncated to the second)
//     as the cursor; the caller should store a new template's creation time
//     as its cursor, so its first activation is the first one after it.
//   - catch_up "none" skips activations only when several are due at once
//     (downtime, a clock jump forward); a single activation since the cursor
//     is not a catch-up and fires however late it is, unless a window bounds
//     its lateness.
//   - window: an activation fires when now - activation <= window, and is
//     skipped when it is later than that; lateness is real elapsed time,
//     measured from the instant the activation resolves to (after a gap,
//     from the end of the gap). "" or a zero duration means no bound.
//   - The cursor only moves forward; when now is before the cursor (the wall
//     clock moved back), nothing fires and the cursor stays.
//   - Missed activations are counted over at most the last ten years before
//     now. A calendar spec with no activation within ten years (say
//     "0 0 30 2 *") never fires; Next returns the zero time.
//   - Overlap (a task from the template still pending) needs the partition's
//     state: the caller applies it, not this package.
package sched
