package api_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/api"
	"github.com/scenario-server/scenario-server/auth"
)

// From the hostile review: a stream opened with a token that is then revoked ends at its next
// check of the credentials, with a last "end" event saying why, instead of streaming on for
// ever. The check runs every 20 ms here (15 s by default); the test waits for the end of the
// stream, not for a time.
func TestStreamEndsWhenItsTokenIsRevoked(t *testing.T) {
	st := sqliteStore(t)
	c := newClient(t, st, withTokens(st), func(cfg *api.Config) { cfg.StreamRecheck = 20 * time.Millisecond })
	admin := tokenFor(t, st, "admin", auth.Admin, time.Time{})
	viewer := tokenFor(t, st, "watcher", auth.Viewer, time.Time{})
	c.send(request{Method: "POST", Path: "/api/scenarios", Body: map[string]any{"name": "watched", "graph": map[string]any{"nodes": []any{}, "edges": []any{}}},
		Header: map[string]string{"Authorization": "Bearer " + admin}}).ok(t, http.StatusCreated, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/api/scenarios/watched/counts/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+viewer)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("opening the stream: %d", resp.StatusCode)
	}
	lines := bufio.NewScanner(resp.Body)
	if !lines.Scan() { // the stream is open: its first line has come
		t.Fatalf("no first line: %v", lines.Err())
	}
	tokens, err := st.ListTokens(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range tokens {
		if tk.Name == "watcher" {
			if _, err := st.RevokeToken(context.Background(), tk.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	var rest []string
	for lines.Scan() { // until the server ends the stream (or the 20 s context does)
		rest = append(rest, lines.Text())
	}
	if ctx.Err() != nil {
		t.Fatalf("the stream went on after its token was revoked: %q", rest)
	}
	text := strings.Join(rest, "\n")
	if !strings.Contains(text, "event: end") || !strings.Contains(text, "no longer valid") {
		t.Errorf("the stream ended without an end event saying why: %q", text)
	}
}
