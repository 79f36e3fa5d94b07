// Package web is roster-web's console (docs/web.md): the handlers, the
// embedded templates, style sheet and script that show the data tree in a
// browser — the workers, their tasks, runs, spend, gates and
// conversations — read through the same libraries as the command line.
//
// What a reader must know:
//
//   - Every request needs the token ($ROSTER_HOME/web-token, made at the
//     first start, mode 0600), carried in an HttpOnly, SameSite=Strict
//     cookie after a login; the Host header must be one the server
//     listens as (no DNS rebinding); every write is a POST with the CSRF
//     token, and there are three writes only: a gate's decision,
//     pause/resume, requeue — the command line's own library calls,
//     journaled by "operator (web)" where the journal records them.
//   - Everything from the data tree is data, and what a box or a chat
//     wrote is hostile: it is rendered through html/template only, never
//     as template.HTML; the Content-Security-Policy allows this origin's
//     script and style alone, and no asset comes from elsewhere.
//   - Unreadable data is shown as an error on its page, never repaired.
//   - A transcript is streamed, one entry at a time, never read whole;
//     the overview reads folder listings, tasks.json and today's usage
//     index, never every run.json.
package web
