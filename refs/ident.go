package refs

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"
)

var identLine = regexp.MustCompile(`^(.*) <(.*)> (\d+) ([+-]\d{4})$`)

// ident is the committer identity git would use, read once per process.
type ident struct {
	name, email string
	placeholder bool       // git has none: git-lease's own
	pinned      *time.Time // from GIT_COMMITTER_DATE, which pins every timestamp
}

// Identity returns the committer identity and time that git itself would
// use now (user.name, user.email, GIT_COMMITTER_*; GIT_COMMITTER_DATE pins the
// time), so lease logs are authored like any other commit. When git has no
// identity configured, git-lease signs as "git-lease <git-lease@localhost>".
func (r *Repo) Identity() (object.Signature, error) {
	r.mu.Lock()
	id := r.ident
	r.mu.Unlock()
	if id == nil {
		// Unlocked: reading it takes the configuration's lock.
		read, err := r.readIdent()
		if err != nil {
			return object.Signature{}, err
		}
		r.mu.Lock()
		if r.ident == nil {
			r.ident = read
		}
		id = r.ident
		r.mu.Unlock()
	}
	when := time.Now()
	if id.pinned != nil {
		when = *id.pinned
	}
	return object.Signature{Name: id.name, Email: id.email, When: when}, nil
}

func (r *Repo) readIdent() (*ident, error) {
	if id := r.plainIdent(); id != nil {
		return id, nil
	}
	out, err := r.Git(context.Background(), nil, "var", "GIT_COMMITTER_IDENT")
	if err != nil {
		if date := os.Getenv("GIT_COMMITTER_DATE"); date != "" {
			return nil, fmt.Errorf("cannot use GIT_COMMITTER_DATE=%q: %v", date, err)
		}
		return &ident{name: "git-lease", email: PlaceholderEmail, placeholder: true}, nil
	}
	m := identLine.FindStringSubmatch(strings.TrimSpace(string(out)))
	if m == nil {
		return nil, fmt.Errorf("git var GIT_COMMITTER_IDENT: unexpected %q", out)
	}
	id := &ident{name: m[1], email: m[2]}
	if os.Getenv("GIT_COMMITTER_DATE") != "" {
		secs, _ := strconv.ParseInt(m[3], 10, 64)
		zone, _ := time.Parse("-0700", m[4])
		t := time.Unix(secs, 0).In(zone.Location())
		id.pinned = &t
	}
	return id, nil
}

// PlaceholderEmail is the email of the identity git-lease signs and
// commits as when git has none.
const PlaceholderEmail = "git-lease@localhost"

// HasIdentity reports whether git has a committer identity here (user.name
// and user.email, or GIT_COMMITTER_*), rather than git-lease's placeholder.
func (r *Repo) HasIdentity() bool {
	_, err := r.Identity()
	r.mu.Lock()
	defer r.mu.Unlock()
	return err == nil && !r.ident.placeholder
}

// Now is the time git-lease records for events: now, or GIT_COMMITTER_DATE
// when that pins the time of commits.
func (r *Repo) Now() time.Time {
	sig, err := r.Identity()
	if err != nil {
		return time.Now().UTC()
	}
	return sig.When.UTC()
}

// plainIdent is the identity git var would print, read from the
// environment and the configuration already read, without a git process
// (one fewer before every lease's first record). It answers only where
// git's rules are plain: both values set (GIT_COMMITTER_NAME, else
// committer.name, else user.name; the same for the email) and clean, so
// that git's trimming would leave them as they are, and no
// GIT_COMMITTER_DATE, whose formats only git parses. Anything else is nil,
// for git to answer.
func (r *Repo) plainIdent() *ident {
	if _, pinned := os.LookupEnv("GIT_COMMITTER_DATE"); pinned {
		return nil
	}
	pick := func(env, committerKey, userKey string) string {
		if v, set := os.LookupEnv(env); set {
			return v
		}
		if v := r.Config(committerKey); v != "" {
			return v
		}
		return r.Config(userKey)
	}
	name := pick("GIT_COMMITTER_NAME", "committer.name", "user.name")
	email := pick("GIT_COMMITTER_EMAIL", "committer.email", "user.email")
	if !cleanIdent(name) || !cleanIdent(email) {
		return nil
	}
	return &ident{name: name, email: email}
}

// cleanIdent reports whether git keeps an identity value as it is: it
// trims "crud" from both ends (controls, spaces and ,:;<>"\' — and, in
// older versions, '.') and drops newlines and angle brackets anywhere.
func cleanIdent(v string) bool {
	crud := func(c byte) bool { return c <= ' ' || strings.IndexByte(".,:;<>\"\\'", c) >= 0 }
	return v != "" && !crud(v[0]) && !crud(v[len(v)-1]) && !strings.ContainsAny(v, "<>\n")
}
