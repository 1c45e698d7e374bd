package ui

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"sync"
	"time"
)

// sessionCookie names the cookie that carries a session's id: random, the
// session itself stays on the server. __Host-: only this host sets it
// (Secure, Path=/, no Domain).
const sessionCookie = "__Host-solar-ui-session"

// maxSessions bounds the sessions kept: past it, the oldest goes.
const maxSessions = 10_000

// session is a logged-in user: their name and groups as the provider's ID
// token gave them (what Kubernetes authorizes), and the token every action
// must carry (CSRF).
type session struct {
	User    string
	Groups  []string
	CSRF    string
	Expires time.Time
}

// sessions are the logged-in users by session id; an expired one counts as
// none, and is removed when met or when the map is full.
type sessions struct {
	mu  sync.Mutex
	ttl time.Duration
	now func() time.Time
	by  map[string]*session
}

func newSessions(ttl time.Duration, now func() time.Time) *sessions {
	return &sessions{ttl: ttl, now: now, by: map[string]*session{}}
}

// random is n random bytes, URL-safe base64.
func random(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// start makes a session for user and sets its cookie: HttpOnly, Secure,
// SameSite=Lax (the provider's redirect back is a top-level GET), the
// whole site.
func (s *sessions) start(w http.ResponseWriter, user string, groups []string) *session {
	id := random(32)
	se := &session{User: user, Groups: groups, CSRF: random(32), Expires: s.now().Add(s.ttl)}
	s.mu.Lock()
	if len(s.by) >= maxSessions {
		oldest := ""
		for k, v := range s.by {
			if s.now().After(v.Expires) {
				delete(s.by, k)
			} else if oldest == "" || v.Expires.Before(s.by[oldest].Expires) {
				oldest = k
			}
		}
		if len(s.by) >= maxSessions {
			delete(s.by, oldest)
		}
	}
	s.by[id] = se
	s.mu.Unlock()
	// A browser session cookie: the server ends the session at its TTL.
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/", HttpOnly: true, Secure: true,
		SameSite: http.SameSiteLaxMode})
	return se
}

// of is the request's session, nil when it has none or it expired.
func (s *sessions) of(r *http.Request) *session {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	se := s.by[c.Value]
	if se == nil || s.now().After(se.Expires) {
		delete(s.by, c.Value)
		return nil
	}
	return se
}

// end forgets the request's session and clears its cookie.
func (s *sessions) end(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		s.mu.Lock()
		delete(s.by, c.Value)
		s.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", HttpOnly: true, Secure: true,
		SameSite: http.SameSiteLaxMode, MaxAge: -1})
}

// validCSRF says whether a form's token is the session's.
func (se *session) validCSRF(token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(se.CSRF)) == 1
}
