package store

import (
	"context"
	"time"
)

// The audit log's bounds.
const (
	// MaxAuditFieldBytes is the longest text an audit entry keeps in a field; longer text
	// (a client's address, a name) is cut to it, so that an entry, and a page of them, stays
	// bounded: a page of MaxAuditPage entries is at most about 8 × MaxAuditFieldBytes ×
	// MaxAuditPage bytes. The fold's index holds six such fields: PostgreSQL's B-tree refuses
	// an entry past 2,704 bytes (at 1,000 bytes a field, every audit write failed).
	MaxAuditFieldBytes = 256
	// MaxAuditPage is the most entries ListAudit returns at once.
	MaxAuditPage = 1000
)

// AuditStore keeps the audit log: who did what to which scenario, from where, and how it
// ended. Entries are only ever appended, and deleted only by age (PruneAudit: retention).
// Store embeds it.
type AuditStore interface {
	// AppendAudit stores e, its text fields cut to MaxAuditFieldBytes (at a UTF-8 boundary),
	// with the store's clock as Time when e.Time is zero, and returns it with its ID.
	AppendAudit(ctx context.Context, e AuditEntry) (AuditEntry, error)

	// FoldAudit is AppendAudit for a request repeated in a loop (reading results): when the
	// newest entry with e's Subject, Name, Address, Action, Scenario, Version and Outcome was
	// recorded at or after since, e is folded into it (its Repeats counts one more and its
	// LastTime becomes e.Time; its Time and RequestID stay the first request's), else e is
	// appended. It returns the entry e is in, with its ID.
	FoldAudit(ctx context.Context, e AuditEntry, since time.Time) (AuditEntry, error)

	// ListAudit returns the entries matching f, ordered by ID, at most f.Limit of them
	// (1 to MaxAuditPage; other values mean MaxAuditPage). An empty result is a nil slice
	// and no error.
	ListAudit(ctx context.Context, f AuditFilter) ([]AuditEntry, error)

	// PruneAudit deletes the entries recorded before before (Time < before), but the newest
	// entry, and returns how many it deleted (retention: the runtime calls it periodically).
	// The IDs of the other entries do not change, and new entries keep counting from the
	// last ID given.
	PruneAudit(ctx context.Context, before time.Time) (int64, error)
}

// AuditEntry is one entry of the audit log.
type AuditEntry struct {
	ID   int64     `json:"id"`
	Time time.Time `json:"time"`
	// Subject and Name are the identity's (auth.Identity).
	Subject string `json:"subject"`
	Name    string `json:"name"`
	// Address is the client's address: the connection's, or the one a trusted proxy gave.
	Address string `json:"address"`
	// Action is what was done: "scenario.create", "deploy", "results.read", ...
	Action string `json:"action"`
	// Scenario is the scenario acted on; empty for actions on none (tokens).
	Scenario string `json:"scenario,omitempty"`
	// Version is the scenario's version acted on; 0 when none applies.
	Version int `json:"version,omitempty"`
	// Target is what else was acted on, as text: the token of token.create and token.revoke
	// (`token 12 "ci" (deployer, expires 2027-01-05T08:00:00Z)`), the role a sign-in gave
	// (`role deployer`), the sessions sessions.end ended (`sessions of "u-7" (2 ended)`).
	// Empty when none applies.
	// FoldAudit does not compare it: the actions it folds have none.
	Target string `json:"target,omitempty"`
	// Outcome is "ok", or the stable code of the problem that answered the request.
	Outcome   string `json:"outcome"`
	RequestID string `json:"requestId,omitempty"`
	// Repeats counts the same requests folded into this entry after the first (FoldAudit),
	// and LastTime is the time of the last of them (nil when none was).
	Repeats  int64      `json:"repeats,omitempty"`
	LastTime *time.Time `json:"lastTime,omitempty"`
}

// AuditFilter selects entries of the audit log. Zero fields select everything.
type AuditFilter struct {
	// From and To bound Time: From <= Time < To.
	From, To time.Time
	// Identity matches the Subject or the Name.
	Identity string
	Action   string
	Scenario string
	Outcome  string
	// After is the paging cursor: only entries with a greater ID.
	After int64
	Limit int
}

// AuditLimit is f.Limit within 1 to MaxAuditPage.
func (f AuditFilter) AuditLimit() int {
	if f.Limit <= 0 || f.Limit > MaxAuditPage {
		return MaxAuditPage
	}
	return f.Limit
}

// CutAuditFields cuts e's text fields to MaxAuditFieldBytes, at UTF-8 boundaries.
func CutAuditFields(e AuditEntry) AuditEntry {
	for _, p := range []*string{&e.Subject, &e.Name, &e.Address, &e.Action, &e.Scenario, &e.Target, &e.Outcome, &e.RequestID} {
		*p = cutUTF8(*p, MaxAuditFieldBytes)
	}
	return e
}

func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
