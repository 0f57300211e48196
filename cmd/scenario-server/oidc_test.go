package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/auth/oidctest"
)

// TestOIDCBinary runs the real binary against an OIDC provider started in the test: bearer
// JWTs with roles from the configured claim, and the designer's sign-in through the browser's
// redirects, with the client secret from the environment and never in the log.
func TestOIDCBinary(t *testing.T) {
	bin := buildServer(t, false)
	p := oidctest.New(t)
	// The redirect URL names the port before the server opens it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	st := sqliteServerStore(t)
	cmd := exec.Command(bin, "--addr", addr, "--log-format", "json", "--data-dir", st.dataDir,
		"--oidc-issuer", p.Issuer, "--oidc-client-id", p.ClientID, "--oidc-roles-claim", "realm_access.roles",
		"--oidc-redirect-url", "http://"+addr+"/auth/callback")
	cmd.Env = append(os.Environ(), envDatabaseURL+"=", envDataDir+"=", envOIDCClientSecret+"="+p.ClientSecret)
	proc := &serverProcess{t: t, cmd: cmd, logs: &syncBuffer{}, exited: make(chan error, 1), base: "http://" + addr}
	cmd.Stderr, cmd.Stdout = proc.logs, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { proc.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-proc.exited
		}
		if t.Failed() {
			t.Logf("server logs:\n%s", lastLines(proc.logs.String(), 40))
		}
	})
	if rec := waitForLog(t, proc.logs, "listening"); rec["authentication"] != true {
		t.Fatalf("listening without authentication: %v", rec)
	}

	get := func(c *http.Client, path string, header map[string]string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", proc.base+path, nil)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	plain := &http.Client{Timeout: 10 * time.Second}
	deployer := p.Token(t, map[string]any{"sub": "d-1", "name": "Dee", "realm_access": map[string]any{"roles": []any{"deployer"}}}, time.Hour)
	if code, body := get(plain, "/api/me", map[string]string{"Authorization": "Bearer " + deployer}); code != 200 ||
		!strings.Contains(body, `"name":"Dee","role":"deployer","method":"jwt"`) {
		t.Errorf("bearer JWT: %d %s", code, body)
	}
	expired := p.Token(t, map[string]any{"sub": "d-1", "realm_access": map[string]any{"roles": []any{"admin"}}}, -time.Minute)
	if code, _ := get(plain, "/api/scenarios", map[string]string{"Authorization": "Bearer " + expired}); code != 401 {
		t.Errorf("expired JWT: %d", code)
	}

	// The browser: /auth/login → provider → /auth/callback → /, then the session cookie.
	p.Login(map[string]any{"sub": "e-1", "name": "Eddie", "realm_access": map[string]any{"roles": []any{"editor"}}})
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	if code, body := get(browser, "/auth/login", nil); code != 200 || !strings.Contains(body, "<html") {
		t.Fatalf("sign-in did not end on the designer: %d %.200s", code, body)
	}
	if code, body := get(browser, "/api/me", nil); code != 200 || !strings.Contains(body, `"name":"Eddie","role":"editor","method":"session"`) {
		t.Errorf("after sign-in: %d %s", code, body)
	}
	if code, _ := get(browser, "/api/tokens", nil); code != 403 {
		t.Errorf("editor lists tokens: %d; want 403", code)
	}
	if key, err := os.Stat(st.dataDir + "/" + sessionKeyFile); err != nil || key.Mode().Perm() != 0o600 || key.Size() != 32 {
		t.Errorf("session key: %v %v", key, err)
	}
	if strings.Contains(proc.logs.String(), p.ClientSecret) {
		t.Errorf("the client secret is in the log")
	}
	proc.stop()
}

// TestOIDCProviderDownAtStart: the binary with a provider that cannot be reached starts (the
// warning in its log) and answers the provider's JWTs 503, not 401, rather than exiting; so it
// does with a provider that takes connections and never answers, within 15 s (it waited 30 s
// for it before listening: a health probe got no answer meanwhile).
func TestOIDCProviderDownAtStart(t *testing.T) {
	bin := buildServer(t, false)
	for _, provider := range []string{"closed", "hanging"} {
		t.Run(provider, func(t *testing.T) { testOIDCProviderDownAtStart(t, bin, provider) })
	}
}

func testOIDCProviderDownAtStart(t *testing.T, bin, provider string) {
	p := oidctest.New(t)
	down, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuer := "http://" + down.Addr().String()
	if provider == "closed" {
		down.Close()
	} else {
		defer down.Close()
		go func() { // takes connections, reads the requests, answers nothing
			for {
				c, err := down.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				go io.Copy(io.Discard, c)
			}
		}()
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	st := sqliteServerStore(t)
	cmd := exec.Command(bin, "--addr", addr, "--log-format", "json", "--data-dir", st.dataDir,
		"--oidc-issuer", issuer, "--oidc-client-id", p.ClientID)
	cmd.Env = append(os.Environ(), envDatabaseURL+"=", envDataDir+"=")
	proc := &serverProcess{t: t, cmd: cmd, logs: &syncBuffer{}, exited: make(chan error, 1), base: "http://" + addr}
	cmd.Stderr, cmd.Stdout = proc.logs, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { proc.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-proc.exited
		}
		if t.Failed() {
			t.Logf("server logs:\n%s", lastLines(proc.logs.String(), 40))
		}
	})
	started := time.Now()
	warn := waitForLog(t, proc.logs, "the OIDC provider could not be read; its tokens and sign-ins are answered 503 until it can (tried again at most every 10 s, when one comes)")
	if !strings.Contains(fmt.Sprint(warn["error"]), issuer) {
		t.Errorf("the warning does not name the issuer: %v", warn)
	}
	waitForLog(t, proc.logs, "listening")
	if waited := time.Since(started); waited > 15*time.Second {
		t.Errorf("listening %v after the start; want within 15 s", waited.Round(time.Second))
	}
	req, _ := http.NewRequest("GET", proc.base+"/api/scenarios", nil)
	req.Header.Set("Authorization", "Bearer "+p.Token(t, map[string]any{"sub": "d-1"}, time.Hour))
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a JWT with the provider down: %d; want 503", resp.StatusCode)
	}
	proc.stop()
}
