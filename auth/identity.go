// Package auth is who a request comes from and what they may do: the identity that
// authentication established (an API token, an OIDC session cookie or a bearer JWT), never a
// header a client sets, and the roles it holds.
//
// Roles are ordered: each includes the ones before it.
//
//	viewer    read scenarios, versions, validation, results and counts
//	editor    also save, import, test and archive
//	deployer  also deploy and cancel, and send events
//	admin     also API tokens and the audit log
package auth

import (
	"context"
	"fmt"
	"strings"
)

// Role is one of Viewer, Editor, Deployer and Admin.
type Role string

// The roles, least first.
const (
	Viewer   Role = "viewer"
	Editor   Role = "editor"
	Deployer Role = "deployer"
	Admin    Role = "admin"
)

// Roles lists the roles, least first.
var Roles = []Role{Viewer, Editor, Deployer, Admin}

// rank is a role's place in Roles, -1 for an unknown role.
func (r Role) rank() int {
	for i, x := range Roles {
		if x == r {
			return i
		}
	}
	return -1
}

// Includes reports whether r grants what want grants: r is want or a role after it.
func (r Role) Includes(want Role) bool { return want.rank() >= 0 && r.rank() >= want.rank() }

// ParseRole reads a role's name (case-insensitive); unknown names are an error.
func ParseRole(s string) (Role, error) {
	r := Role(strings.ToLower(strings.TrimSpace(s)))
	if r.rank() < 0 {
		return "", fmt.Errorf("unknown role %q (the roles are viewer, editor, deployer and admin)", s)
	}
	return r, nil
}

// Method says how an identity was established.
type Method string

// The authentication methods. None is the server without authentication (--insecure-no-auth,
// or loopback only): every request is the local user, with every role.
const (
	MethodNone    Method = "none"
	MethodToken   Method = "token"
	MethodSession Method = "session"
	MethodBearer  Method = "jwt"
	// MethodTokenCookie is an API token the designer signed in with (TokenCookie).
	MethodTokenCookie Method = "token-cookie"
)

// Identity is who a request comes from.
type Identity struct {
	// Subject identifies the principal for good: "token:<id>", or the OIDC issuer's subject.
	Subject string `json:"subject"`
	// Name is what the audit log and the history show: a token's name, the OIDC name or email.
	Name string `json:"name"`
	// Role is the highest role held.
	Role   Role   `json:"role"`
	Method Method `json:"method"`
}

// Can reports whether the identity holds want (or a role after it).
func (id Identity) Can(want Role) bool { return id.Role.Includes(want) }

type identityKey struct{}

// WithIdentity returns ctx carrying id.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// FromContext returns the identity ctx carries, and false when it carries none (the request
// was not authenticated).
func FromContext(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	return id, ok
}
