package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2"

	"github.com/scenario-server/scenario-server/auth"
	"github.com/scenario-server/scenario-server/internal/names"
	"github.com/scenario-server/scenario-server/store"
)

const tagAccess = "access"

// CodeTokenNotFound (404) means the API token named by its ID does not exist.
const CodeTokenNotFound = "token-not-found"

// MaxTokenLifetime is the longest expiresIn a token may be given: 10 years. Longer values are
// answered 422 validation-failed (and would overflow a time.Duration not much further).
const MaxTokenLifetime = 10 * 365 * 24 * time.Hour

// MinTokenLifetime is the shortest expiresIn: a token that expires before it can be used
// (expiresIn "1ns", expiring before it was created) is a mistake.
const MinTokenLifetime = time.Minute

// APIToken is an API token as listed: never its secret.
type APIToken struct {
	ID        int64      `json:"id" doc:"The token's ID, for revoking it." example:"3"`
	Name      string     `json:"name" doc:"Who or what uses the token; the name the history and the audit log show." example:"ci"`
	Role      string     `json:"role" enum:"viewer,editor,deployer,admin" doc:"The role the token grants." example:"deployer"`
	CreatedAt time.Time  `json:"createdAt"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty" doc:"When the token stops being accepted; absent for a token that does not expire."`
	RevokedAt *time.Time `json:"revokedAt,omitempty" doc:"When the token was revoked; absent for a token in use."`
}

// TokenAuditTarget is a token's store.AuditEntry.Target in the entries of its creation and
// revocation: `token 12 "ci" (deployer, expires 2027-01-05T08:00:00Z)`, with "no expiry" for a
// token that does not expire.
func TokenAuditTarget(t store.Token) string {
	expiry := "no expiry"
	if !t.ExpiresAt.IsZero() {
		expiry = "expires " + t.ExpiresAt.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("token %d %q (%s, %s)", t.ID, t.Name, t.Role, expiry)
}

func apiToken(t store.Token) APIToken {
	out := APIToken{ID: t.ID, Name: t.Name, Role: t.Role, CreatedAt: t.CreatedAt}
	if !t.ExpiresAt.IsZero() {
		out.ExpiresAt = &t.ExpiresAt
	}
	if !t.RevokedAt.IsZero() {
		out.RevokedAt = &t.RevokedAt
	}
	return out
}

// NewAPIToken is the body of POST /api/tokens.
type NewAPIToken struct {
	Name      string `json:"name" minLength:"1" maxLength:"100" doc:"Who or what uses the token." example:"ci"`
	Role      string `json:"role" enum:"viewer,editor,deployer,admin" doc:"The role the token grants." example:"deployer"`
	ExpiresIn string `json:"expiresIn,omitempty" maxLength:"20" doc:"How long the token is accepted, as a Go duration (\"720h\"), at most 10 years; absent means it does not expire." example:"720h"`
}

// CreatedAPIToken is the answer of POST /api/tokens: the only time the secret is shown.
type CreatedAPIToken struct {
	Token  APIToken `json:"token"`
	Secret string   `json:"secret" doc:"The token to send as \"Authorization: Bearer <secret>\". It is shown this once: the server keeps only its SHA-256." example:"sst_3q2-7w..."`
}

type tokenListOutput struct {
	Body struct {
		Tokens []APIToken `json:"tokens" doc:"Every token, revoked and expired ones too, by ID."`
	}
}

type createTokenInput struct {
	Body NewAPIToken
}

type createTokenOutput struct {
	Body CreatedAPIToken
}

type revokeTokenInput struct {
	ID int64 `path:"id" minimum:"1" doc:"The token's ID."`
}

type revokeTokenOutput struct {
	Body APIToken
}

// ErrInvalidTokenName is CreateToken's error for a name that is empty, longer than 100 bytes,
// not UTF-8, with control or invisible characters (names.IsInvisible), or reading as the
// server's own identities (auth.ReadsAsOwn): the name shows in the history,
// the audit log and `token list`, where a newline or an escape sequence could forge lines and
// a direction override ("x\u202egnp.exe" shows as "xexe.png") could make it look like another.
var ErrInvalidTokenName = errors.New("a token name is 1 to 100 bytes of UTF-8 without control or invisible characters, and does not read as the server's own identities (local, token:..., cli:..., ... (command line))")

// CreateToken draws a new token secret and stores its hash: what POST /api/tokens and the
// token subcommand do. expiresIn 0 means the token does not expire. Errors:
// ErrInvalidTokenName, and the store's.
func CreateToken(ctx context.Context, st store.TokenStore, name string, role auth.Role, expiresIn time.Duration) (store.Token, string, error) {
	if name == "" || len(name) > 100 || !utf8.ValidString(name) || strings.IndexFunc(name, names.IsHidden) >= 0 || auth.ReadsAsOwn(name) {
		return store.Token{}, "", fmt.Errorf("%w: %q", ErrInvalidTokenName, name)
	}
	nt := store.NewToken{Name: name, Role: string(role)}
	if expiresIn > 0 {
		nt.ExpiresAt = time.Now().Add(expiresIn)
	}
	// A second draw of the same 256-bit secret does not happen; one retry keeps the contract.
	for attempt := 0; ; attempt++ {
		var secret string
		secret, nt.SecretHash = auth.NewTokenSecret()
		t, err := st.CreateToken(ctx, nt)
		if errors.Is(err, store.ErrAlreadyExists) && attempt == 0 {
			continue
		}
		return t, secret, err
	}
}

func (h *handlers) registerTokens(hapi huma.API) {
	register(hapi, h, huma.Operation{
		OperationID: "list-tokens",
		Method:      http.MethodGet,
		Path:        "/api/tokens",
		Summary:     "List API tokens",
		Description: "Every API token, revoked and expired ones too, without secrets. Admin only.",
		Tags:        []string{tagAccess},
	}, func(ctx context.Context, _ *struct{}) (*tokenListOutput, error) {
		list, err := h.store.ListTokens(ctx)
		if err != nil {
			return nil, storeError(ctx, err, "", 0)
		}
		out := &tokenListOutput{}
		out.Body.Tokens = make([]APIToken, 0, len(list))
		for _, t := range list {
			out.Body.Tokens = append(out.Body.Tokens, apiToken(t))
		}
		return out, nil
	})
	register(hapi, h, huma.Operation{
		OperationID:   "create-token",
		Method:        http.MethodPost,
		Path:          "/api/tokens",
		DefaultStatus: http.StatusCreated,
		Summary:       "Create an API token",
		Description:   "Creates a token with a name, a role and an optional lifetime, and answers its secret, shown this once. Admin only.",
		Tags:          []string{tagAccess},
		Errors:        []int{http.StatusUnprocessableEntity},
	}, func(ctx context.Context, in *createTokenInput) (*createTokenOutput, error) {
		noteTarget(ctx, fmt.Sprintf("token %q (%s)", in.Body.Name, in.Body.Role))
		role, err := auth.ParseRole(in.Body.Role)
		if err != nil {
			return nil, problemf(http.StatusUnprocessableEntity, CodeValidationFailed, "role: %v", err)
		}
		var lifetime time.Duration
		if in.Body.ExpiresIn != "" {
			lifetime, err = time.ParseDuration(in.Body.ExpiresIn)
			if err != nil || lifetime < MinTokenLifetime || lifetime > MaxTokenLifetime {
				return nil, problemf(http.StatusUnprocessableEntity, CodeValidationFailed,
					"expiresIn: %q is not a duration from 1m to 87600h", in.Body.ExpiresIn)
			}
		}
		t, secret, err := CreateToken(ctx, h.store, in.Body.Name, role, lifetime)
		if errors.Is(err, ErrInvalidTokenName) {
			return nil, problemf(http.StatusUnprocessableEntity, CodeValidationFailed, "name: %v", err)
		}
		if err != nil {
			return nil, storeError(ctx, err, "", 0)
		}
		noteTarget(ctx, TokenAuditTarget(t))
		return &createTokenOutput{Body: CreatedAPIToken{Token: apiToken(t), Secret: secret}}, nil
	})
	register(hapi, h, huma.Operation{
		OperationID: "revoke-token",
		Method:      http.MethodDelete,
		Path:        "/api/tokens/{id}",
		Summary:     "Revoke an API token",
		Description: "Revokes the token: it is refused (401) from now on, and stays in the list. Revoking twice is not an error. Admin only.",
		Tags:        []string{tagAccess},
		Errors:      []int{http.StatusNotFound},
	}, func(ctx context.Context, in *revokeTokenInput) (*revokeTokenOutput, error) {
		noteTarget(ctx, fmt.Sprintf("token %d", in.ID))
		t, err := h.store.RevokeToken(ctx, in.ID)
		if err == nil {
			noteTarget(ctx, TokenAuditTarget(t))
		}
		if errors.Is(err, store.ErrNotFound) {
			return nil, problemf(http.StatusNotFound, CodeTokenNotFound, "there is no token %d", in.ID)
		}
		if err != nil {
			return nil, storeError(ctx, err, "", 0)
		}
		return &revokeTokenOutput{Body: apiToken(t)}, nil
	})
}
