// Package fetch is the guarded HTTP GET behind the http_get tool. Core runs
// it after the owner approves a call (the worker has no network). It
// follows redirects by hand, five at most by default, putting every hop
// through the policy's URL and redirect rules; checks every address it
// connects to at dial time with the policy's address rules, so a name
// cannot rebind to an internal address between check and use; ignores any
// proxy in the environment; and keeps at most a capped number of body
// bytes.
package fetch
