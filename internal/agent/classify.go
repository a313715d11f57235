package agent

import (
	"regexp"
	"strconv"
	"strings"
)

// classifyMessage marks res transient, permanent or auth from an agent's
// error text: the HTTP status it names, else words of a login failure or
// of a transient one.
func classifyMessage(res *Result, msg string) {
	classifyStatus(res, statusIn(msg))
	if !res.Transient && !res.Auth && authText(msg) {
		markAuth(res)
	}
	if !res.Permanent && !res.Transient && transientText(msg) {
		res.Transient = true
	}
}

// classifyStatus maps an HTTP status reported by the agent to a failure kind.
func classifyStatus(res *Result, status int) {
	switch {
	case status == 429 || status == 529 || status == 408 || (status >= 500 && status <= 599):
		res.Transient = true
	case status == 401:
		markAuth(res)
	case status == 402 || status == 403:
		res.Permanent = true
	}
}

// markAuth records a failed login: permanent on that login.
func markAuth(res *Result) {
	res.Auth, res.Permanent = true, true
}

// authMarkers are texts of a missing, expired or invalid login, as the
// CLIs and their providers print them (lower case): Claude Code's "Invalid
// API key · Please run /login" and "OAuth token has expired", Codex's
// "401 Unauthorized" and "Please log out and sign in again", Google's
// UNAUTHENTICATED and "API key not valid".
var authMarkers = []string{
	"unauthorized", "unauthenticated", "invalid api key", "invalid_api_key", "api key not valid",
	"authentication_error", "authentication_failed", "failed to authenticate", "token has expired",
	"token_expired", "please run /login", "not logged in", "codex login", "sign in again", "log in again",
	"refresh token", "expired or revoked", "invalid_grant", "please set an auth method",
}

func authText(s string) bool {
	s = strings.ToLower(s)
	for _, m := range authMarkers {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

var apiErrorRE = regexp.MustCompile(`API Error: (\d{3})\b`)

// apiErrorStatus finds the status in Claude's "API Error: 529 {…}" text.
func apiErrorStatus(s string) int {
	m := apiErrorRE.FindStringSubmatch(s)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// transientMarkers are texts of provider and network failures that a retry
// later can fix.
var transientMarkers = []string{
	"overloaded", "rate_limit", "rate limit", "connection error", "econnreset",
	"etimedout", "econnrefused", "socket hang up", "fetch failed", "request timed out",
	"network error", "service unavailable", "resource_exhausted", "too many requests",
}

func transientText(s string) bool {
	s = strings.ToLower(s)
	for _, m := range transientMarkers {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

// statusIn finds the HTTP status in an agent's error text: Codex's
// "unexpected status 529 …" and "last status: 429 …", Claude's
// "API Error: 529 …", a Google error's "code":401.
func statusIn(s string) int {
	if n := apiErrorStatus(s); n != 0 {
		return n
	}
	for _, prefix := range []string{"status: ", "status ", `"code":`, `"code": `} {
		rest := s
		for {
			i := strings.Index(rest, prefix)
			if i < 0 {
				break
			}
			rest = rest[i+len(prefix):]
			if n := leadingStatus(rest); n != 0 {
				return n
			}
		}
	}
	return 0
}

// leadingStatus reads a three-digit HTTP status at the start of s.
func leadingStatus(s string) int {
	if len(s) < 3 {
		return 0
	}
	n := 0
	for i := range 3 {
		if s[i] < '0' || s[i] > '9' {
			return 0
		}
		n = n*10 + int(s[i]-'0')
	}
	if len(s) > 3 && s[3] >= '0' && s[3] <= '9' {
		return 0
	}
	if n < 100 || n > 599 {
		return 0
	}
	return n
}
