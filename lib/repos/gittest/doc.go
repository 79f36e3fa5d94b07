// Package gittest is a real git remote for tests: `git http-backend`
// behind an HTTP server on 127.0.0.1 that checks a token, as a forge
// would (HTTP Basic, any user, the token as the password). Go's
// net/http/cgi refuses chunked request bodies, so each body is read
// whole first and handed on with its length.
package gittest
