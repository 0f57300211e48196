package storetest

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/store"
)

// testTokens creates, lists, looks up and revokes API tokens, with and without expiry.
func testTokens(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	hashA := sha256.Sum256([]byte("secret-a"))
	hashB := sha256.Sum256([]byte("secret-b"))
	expires := time.Date(2031, 1, 2, 3, 4, 5, 123456789, time.UTC)

	if list, err := s.ListTokens(ctx); err != nil || list != nil {
		t.Fatalf("ListTokens of an empty store = %v, %v; want nil, nil", list, err)
	}
	a := must(s.CreateToken(ctx, store.NewToken{Name: "ci", Role: "deployer", SecretHash: hashA[:]}))(t)
	b := must(s.CreateToken(ctx, store.NewToken{Name: "ops", Role: "viewer", SecretHash: hashB[:], ExpiresAt: expires}))(t)
	if a.ID == 0 || b.ID <= a.ID {
		t.Fatalf("IDs %d, %d; want increasing from 1 up", a.ID, b.ID)
	}
	if !a.ExpiresAt.IsZero() || !a.RevokedAt.IsZero() || a.CreatedAt.IsZero() {
		t.Errorf("token a = %+v; want created, not expiring, not revoked", a)
	}
	// Microseconds, as every store time: the nanoseconds 789 are gone.
	wantExpires := time.Date(2031, 1, 2, 3, 4, 5, 123456000, time.UTC)
	if !b.ExpiresAt.Equal(wantExpires) {
		t.Errorf("ExpiresAt = %v; want %v", b.ExpiresAt, wantExpires)
	}
	if _, err := s.CreateToken(ctx, store.NewToken{Name: "again", Role: "admin", SecretHash: hashA[:]}); !errors.Is(err, store.ErrAlreadyExists) {
		t.Errorf("a second token with the same hash: %v; want ErrAlreadyExists", err)
	}

	list := must(s.ListTokens(ctx))(t)
	if len(list) != 2 || list[0].Name != "ci" || list[1].Name != "ops" || list[1].Role != "viewer" ||
		!list[1].ExpiresAt.Equal(wantExpires) || !bytes.Equal(list[0].SecretHash, hashA[:]) {
		t.Fatalf("ListTokens = %+v; want ci then ops", list)
	}

	at := time.Date(2030, 6, 1, 0, 0, 0, 0, time.UTC)
	got := must(s.LookupToken(ctx, hashA[:], at))(t)
	if got.ID != a.ID || got.Role != "deployer" {
		t.Errorf("LookupToken(a) = %+v; want token %d, deployer", got, a.ID)
	}
	if got := must(s.LookupToken(ctx, hashB[:], at))(t); got.ID != b.ID {
		t.Errorf("LookupToken(b) before expiry = %+v; want token %d", got, b.ID)
	}
	// Expired exactly at ExpiresAt and after it.
	for _, at := range []time.Time{wantExpires, wantExpires.Add(time.Hour)} {
		if _, err := s.LookupToken(ctx, hashB[:], at); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("LookupToken(b) at %v: %v; want ErrNotFound (expired)", at, err)
		}
	}
	unknown := sha256.Sum256([]byte("nobody"))
	if _, err := s.LookupToken(ctx, unknown[:], at); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("LookupToken(unknown): %v; want ErrNotFound", err)
	}

	r := must(s.RevokeToken(ctx, a.ID))(t)
	if r.RevokedAt.IsZero() || r.Name != "ci" {
		t.Fatalf("RevokeToken = %+v; want ci, revoked", r)
	}
	again := must(s.RevokeToken(ctx, a.ID))(t)
	if !again.RevokedAt.Equal(r.RevokedAt) {
		t.Errorf("revoking twice moved RevokedAt from %v to %v", r.RevokedAt, again.RevokedAt)
	}
	if _, err := s.LookupToken(ctx, hashA[:], at); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("LookupToken(revoked): %v; want ErrNotFound", err)
	}
	if _, err := s.RevokeToken(ctx, 9999); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RevokeToken(9999): %v; want ErrNotFound", err)
	}
	if list := must(s.ListTokens(ctx))(t); len(list) != 2 || !list[0].RevokedAt.Equal(r.RevokedAt) {
		t.Errorf("ListTokens after revoking = %+v; want both, ci revoked", list)
	}
}

// testSessions: sessions a (alice, admin), b (alice, viewer), c (bob, admin) for an hour and e
// (eve) expired a second ago; worked by hand: a, b and c live, e and an unknown id not; a
// second a refused; ending alice's admin and deployer sessions ends a alone (1); signing b
// out ends it; an unknown id signs out without an error; c is not live at its expiry.
func testSessions(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Microsecond)
	hour := now.Add(time.Hour)
	for _, ss := range []store.Session{{ID: "a", Subject: "alice", Role: "admin", ExpiresAt: hour}, {ID: "b", Subject: "alice", Role: "viewer", ExpiresAt: hour},
		{ID: "c", Subject: "bob", Role: "admin", ExpiresAt: hour}, {ID: "e", Subject: "eve", Role: "viewer", ExpiresAt: now.Add(-time.Second)}} {
		if err := s.CreateSession(ctx, ss); err != nil {
			t.Fatal(err)
		}
	}
	live := func(id string, at time.Time) bool {
		t.Helper()
		ok, err := s.SessionLive(ctx, id, at)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	check := func(what string, want map[string]bool) {
		t.Helper()
		for id, w := range want {
			if got := live(id, now); got != w {
				t.Errorf("%s: session %q live %v, want %v", what, id, got, w)
			}
		}
	}
	check("created", map[string]bool{"a": true, "b": true, "c": true, "e": false, "nope": false})
	wantErr(t, "a second a", s.CreateSession(ctx, store.Session{ID: "a", Subject: "mallory", Role: "admin", ExpiresAt: hour}), store.ErrAlreadyExists)
	if n, err := s.EndSessions(ctx, "alice", []string{"admin", "deployer"}); n != 1 || err != nil {
		t.Errorf("ending alice's admin and deployer sessions: %d, %v; want 1", n, err)
	}
	check("alice's admin session ended", map[string]bool{"a": false, "b": true, "c": true})
	if err := s.EndSession(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if err := s.EndSession(ctx, "nope"); err != nil {
		t.Errorf("ending an unknown session: %v", err)
	}
	check("b signed out", map[string]bool{"b": false, "c": true})
	if live("c", hour) {
		t.Error("c live at its expiry")
	}
}
