package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/store"
)

// TestAuthBinary runs the real binary: the token subcommand, API tokens on the server, the
// refusal to listen beyond loopback without authentication, and HTTPS.
func TestAuthBinary(t *testing.T) {
	bin := buildServer(t, false)
	t.Run("TokensOnSQLite", func(t *testing.T) { testBinaryTokens(t, bin, sqliteServerStore(t)) })
	t.Run("TokensOnPostgres", func(t *testing.T) { testBinaryTokens(t, bin, postgresServerStore(t)) })
	t.Run("Posture", func(t *testing.T) { testPosture(t, bin) })
	t.Run("TLS", func(t *testing.T) { testTLS(t, bin) })
}

// runToken runs "scenario-server token args..." on st and returns its stdout; it fails t
// unless the command exits with status want.
func runToken(t *testing.T, bin string, st serverStore, want int, args ...string) (string, string) {
	t.Helper()
	// The flags after the arguments (token revoke 2 --data-dir d): they may stand anywhere.
	cmd := exec.CommandContext(t.Context(), bin, append(append([]string{"token"}, args...), "--data-dir", st.dataDir)...)
	cmd.Env = append(os.Environ(), envDatabaseURL+"="+st.databaseURL, envDataDir+"=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code != want {
		t.Fatalf("token %q: exit %d, want %d\n%s%s", args, code, want, stdout.String(), stderr.String())
	}
	return stdout.String(), stderr.String()
}

func testBinaryTokens(t *testing.T, bin string, st serverStore) {
	secret, _ := runToken(t, bin, st, 0, "create", "--name", "ci", "--role", "deployer", "--expires", "720h")
	secret = strings.TrimSpace(secret)
	if !strings.HasPrefix(secret, "sst_") || len(secret) != 47 {
		t.Fatalf("secret %q; want sst_ and 43 characters", secret)
	}
	viewer, _ := runToken(t, bin, st, 0, "create", "--name", "watcher", "--role", "viewer")
	viewer = strings.TrimSpace(viewer)
	_, stderr := runToken(t, bin, st, 2, "create", "--name", "x", "--role", "root")
	if !strings.Contains(stderr, `unknown role "root"`) {
		t.Errorf("bad role: %s", stderr)
	}
	if _, stderr := runToken(t, bin, st, 2, "create", "--name", "x", "--role", "viewer", "--expires", "30d"); !strings.Contains(stderr, "such as 720h for 30 days") {
		t.Errorf("--expires 30d: %s", stderr)
	}
	// It says which store it used, and when a SQLite store is new.
	if _, stderr := runToken(t, bin, st, 0, "list"); !strings.Contains(stderr, "store: ") || strings.Contains(stderr, "a new, empty store") {
		t.Errorf("token list on the server's store: %s", stderr)
	}
	// Listing a directory without a store is an error, and makes none (new-user round 136:
	// a mistyped --data-dir made an empty store, exit 0); creating says it is a new store.
	nowhere := filepath.Join(t.TempDir(), "d")
	elsewhere := exec.CommandContext(t.Context(), bin, "token", "list", "--data-dir", nowhere)
	elsewhere.Env = append(os.Environ(), envDatabaseURL+"=", envDataDir+"=")
	if out, err := elsewhere.CombinedOutput(); elsewhere.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "scenario-server.db: give the server's --data-dir") {
		t.Errorf("token list on a new directory: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(nowhere, "scenario-server.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("token list made a store: %v", err)
	}
	// Creating in a directory that is not there is an error too, and makes nothing (new-user
	// round 153: a mistyped --data-dir gave a token the server never knew); in one that is
	// there, it makes a new store, and says so.
	elsewhere = exec.CommandContext(t.Context(), bin, "token", "create", "--name", "first", "--role", "admin", "--data-dir", nowhere)
	elsewhere.Env = append(os.Environ(), envDatabaseURL+"=", envDataDir+"=")
	if out, err := elsewhere.CombinedOutput(); elsewhere.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "no data directory "+nowhere+": give the server's --data-dir") {
		t.Errorf("token create in a directory that is not there: %v\n%s", err, out)
	}
	if _, err := os.Stat(nowhere); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("token create made the directory: %v", err)
	}
	if err := os.Mkdir(nowhere, 0o700); err != nil {
		t.Fatal(err)
	}
	elsewhere = exec.CommandContext(t.Context(), bin, "token", "create", "--name", "first", "--role", "admin", "--data-dir", nowhere)
	elsewhere.Env = append(os.Environ(), envDatabaseURL+"=", envDataDir+"=")
	if out, err := elsewhere.CombinedOutput(); err != nil || !strings.Contains(string(out), "scenario-server.db (a new, empty store: give the server's --data-dir") {
		t.Errorf("token create in a new directory: %v\n%s", err, out)
	}

	p := startServer(t, bin, st, "--auth-tokens")
	bearer := func(s string) map[string]string { return map[string]string{"Authorization": "Bearer " + s} }
	status := func(method, path, secret string, body []byte) (int, []byte) {
		t.Helper()
		var header map[string]string
		if secret != "" {
			header = bearer(secret)
		}
		code, _, data, err := call(method, p.base+path, "application/json", header, body)
		if err != nil {
			t.Fatal(err)
		}
		return code, data
	}
	if code, body := status("GET", "/api/scenarios", "", nil); code != 401 || !strings.Contains(string(body), `"code":"unauthenticated"`) {
		t.Errorf("no credentials: %d %s", code, body)
	}
	if code, _ := status("GET", "/healthz", "", nil); code != 200 {
		t.Errorf("/healthz without credentials: %d", code)
	}
	if code, body := status("GET", "/api/scenarios", viewer, nil); code != 200 {
		t.Errorf("viewer lists: %d %s", code, body)
	}
	// The examples are seeded; deploying one as a viewer is forbidden, as a deployer allowed.
	var list struct{ Scenarios []struct{ Name string } }
	_, body := status("GET", "/api/scenarios", viewer, nil)
	if err := json.Unmarshal(body, &list); err != nil || len(list.Scenarios) == 0 {
		t.Fatalf("scenarios %s: %v", body, err)
	}
	deployPath := "/api/scenarios/" + strings.ReplaceAll(list.Scenarios[0].Name, " ", "%20") + "/deploy"
	if code, body := status("POST", deployPath, viewer, []byte("{}")); code != 403 || !strings.Contains(string(body), "needs the deployer role; watcher has viewer") {
		t.Errorf("viewer deploys: %d %s", code, body)
	}
	if code, body := status("POST", deployPath, secret, []byte("{}")); code == 401 || code == 403 {
		t.Errorf("deployer deploys: %d %s", code, body)
	}

	out, _ := runToken(t, bin, st, 0, "list")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID") || !strings.Contains(lines[1], "ci") || !strings.Contains(lines[2], "watcher") {
		t.Errorf("token list:\n%s", out)
	}
	runToken(t, bin, st, 0, "revoke", "2")
	if code, _ := status("GET", "/api/scenarios", viewer, nil); code != 401 {
		t.Errorf("revoked viewer: %d; want 401", code)
	}
	runToken(t, bin, st, 1, "revoke", "9")

	// The commands are in the audit log, by the operating system's user, with the tokens.
	admin, _ := runToken(t, bin, st, 0, "create", "--name", "auditor", "--role", "admin")
	code, body := status("GET", "/api/audit?action=token.create", strings.TrimSpace(admin), nil)
	var page struct{ Entries []store.AuditEntry }
	if err := json.Unmarshal(body, &page); err != nil || code != 200 {
		t.Fatalf("audit log: %d %s", code, body)
	}
	_, body = status("GET", "/api/audit?action=token.revoke", strings.TrimSpace(admin), nil)
	var revokes struct{ Entries []store.AuditEntry }
	if err := json.Unmarshal(body, &revokes); err != nil {
		t.Fatalf("audit log: %s", body)
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range append(page.Entries, revokes.Entries...) {
		got = append(got, fmt.Sprintf("%s|%s|%s|%s|%s|%s", e.Subject, e.Name, e.Address, e.Action, e.Target, e.Outcome))
	}
	who := "cli:" + u.Username + "|" + u.Username + " (command line)|local|"
	want := []string{
		who + `token.create|token 1 "ci" (deployer, expires `,
		who + `token.create|token 2 "watcher" (viewer, no expiry)|ok`,
		who + `token.create|token 3 "auditor" (admin, no expiry)|ok`,
		who + `token.revoke|token 2 "watcher" (viewer, no expiry)|ok`,
	}
	if len(got) != len(want) {
		t.Fatalf("audit entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("audit entry %d: %s; want %s...", i, got[i], want[i])
		}
	}
}

func testPosture(t *testing.T, bin string) {
	// Without authentication on 0.0.0.0: exits 1 with the reason, before serving, and before
	// it writes anything: no data directory.
	for _, addr := range []string{"0.0.0.0:0", "[::]:0"} {
		dataDir := filepath.Join(t.TempDir(), "data")
		cmd := exec.CommandContext(t.Context(), bin, "--addr", addr, "--data-dir", dataDir)
		cmd.Env = append(os.Environ(), envDatabaseURL+"=", envDataDir+"=")
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("%s without auth: %v\n%s", addr, err, out)
		}
		if !strings.Contains(string(out), "refusing to listen without authentication on a non-loopback address") ||
			!strings.Contains(string(out), "--insecure-no-auth") {
			t.Errorf("%s: the message does not say why and what to do:\n%s", addr, out)
		}
		if _, err := os.Stat(dataDir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: the refused start made its data directory (%v)", addr, err)
		}
		// It names the address as given (0.0.0.0, not the listener's [::]), with the port.
		if host := addr[:strings.LastIndex(addr, ":")]; !strings.Contains(string(out), "non-loopback address: "+host+":") {
			t.Errorf("%s: the message does not name %s:\n%s", addr, host, out)
		}
	}
	// On loopback behind a proxy or a public name, without authentication: refused likewise
	// (before, it started and every request through the proxy was the local admin).
	for _, args := range [][]string{{"--public-url", "https://scenarios.example.com"}, {"--allowed-hosts", "scenarios.internal"}, {"--trusted-proxies", "127.0.0.1"}} {
		dataDir := filepath.Join(t.TempDir(), "data")
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second) // a server that starts is killed
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append([]string{"--addr", "127.0.0.1:0", "--data-dir", dataDir}, args...)...)
		cmd.Env = append(os.Environ(), envDatabaseURL+"=", envDataDir+"=")
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("%v without auth: %v\n%s", args, err, out)
		}
		if !strings.Contains(string(out), args[0]+" "+args[1]) || !strings.Contains(string(out), "reach the server from beyond this machine") {
			t.Errorf("%v: the message does not say why:\n%s", args, out)
		}
		if _, err := os.Stat(dataDir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%v: the refused start made its data directory (%v)", args, err)
		}
	}
	// A loopback public URL is this machine's.
	startServer(t, bin, sqliteServerStore(t), "--addr", "127.0.0.1:0", "--public-url", "http://localhost:8080").stop()
	// With --insecure-no-auth it starts and warns.
	p := startServer(t, bin, sqliteServerStore(t), "--addr", "0.0.0.0:0", "--insecure-no-auth")
	warn := waitForLog(t, p.logs, "authentication is off and the server listens beyond loopback: anyone who reaches "+
		"0.0.0.0:"+p.base[strings.LastIndex(p.base, ":")+1:]+" may deploy, cancel and read everything (--insecure-no-auth)")
	if warn["level"] != "WARN" {
		t.Errorf("warning logged as %v", warn["level"])
	}
	p.stop()
	// With authentication it starts without the flag; with no token in its store it says how
	// to create one.
	p = startServer(t, bin, sqliteServerStore(t), "--addr", "0.0.0.0:0", "--auth-tokens")
	if warn := waitForLog(t, p.logs, msgNoTokens); warn["level"] != "WARN" || warn["tokens"] != float64(0) ||
		!strings.HasPrefix(fmt.Sprint(warn["create"]), "scenario-server token create --data-dir ") {
		t.Errorf("no-token warning %v", warn)
	}
	p.stop()
}

func testTLS(t *testing.T, bin string) {
	dir := t.TempDir()
	certFile, keyFile, pool := selfSignedCert(t, dir)
	st := sqliteServerStore(t)
	cmd := exec.Command(bin, "--addr", "127.0.0.1:0", "--log-format", "json", "--data-dir", st.dataDir,
		"--tls-cert", certFile, "--tls-key", keyFile)
	cmd.Env = append(os.Environ(), envDatabaseURL+"=", envDataDir+"=")
	p := &serverProcess{t: t, cmd: cmd, logs: &syncBuffer{}, exited: make(chan error, 1)}
	cmd.Stderr, cmd.Stdout = p.logs, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-p.exited
		}
	})
	rec := waitForLog(t, p.logs, "listening")
	url := rec["url"].(string)
	if !strings.HasPrefix(url, "https://127.0.0.1:") {
		t.Fatalf("url %q; want https", url)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	resp, err := client.Get(url + "healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.TLS == nil || resp.ProtoMajor != 2 {
		t.Errorf("GET /healthz over TLS: %d, TLS %v, HTTP/%d", resp.StatusCode, resp.TLS != nil, resp.ProtoMajor)
	}
	// Plain HTTP on the TLS port gets no API answer.
	if resp, err := http.Get(strings.Replace(url, "https", "http", 1) + "healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Errorf("plain HTTP answered 200")
		}
	}
	p.stop()

	// A missing key file stops the start with its path.
	out, err := exec.Command(bin, "--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--tls-cert", certFile,
		"--tls-key", filepath.Join(dir, "missing.pem")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "missing.pem") {
		t.Errorf("missing key: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "--tls-cert", certFile).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--tls-cert and --tls-key go together") {
		t.Errorf("cert without key: %v\n%s", err, out)
	}
}

// selfSignedCert writes a certificate for 127.0.0.1 and its key into dir.
func selfSignedCert(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "scenario-server test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func TestAuthFlags(t *testing.T) {
	cfg, err := parseServeFlags([]string{"--auth-tokens", "--oidc-issuer", "https://id.example", "--oidc-client-id", "ss",
		"--oidc-redirect-url", "https://ss.example/auth/callback"}, env(map[string]string{envOIDCClientSecret: "s3cret"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := authConfig{Tokens: true, OIDCIssuer: "https://id.example", OIDCClientID: "ss", OIDCClientSecret: "s3cret",
		OIDCRedirectURL: "https://ss.example/auth/callback"}
	if cfg.Auth != want || !cfg.Auth.configured() {
		t.Errorf("got  %+v\nwant %+v", cfg.Auth, want)
	}
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--tls-key", "k.pem"}, nil, "--tls-cert and --tls-key go together"},
		{[]string{"--oidc-issuer", "https://id.example"}, nil, "usage: --oidc-issuer needs --oidc-client-id"},
		{[]string{"--oidc-client-id", "ss"}, nil, "need --oidc-issuer"},
		{[]string{"--oidc-issuer", "127.0.0.1:20860", "--oidc-client-id", "ss"}, nil, `--oidc-issuer "127.0.0.1:20860" is not an http(s) URL`},
		{[]string{"--oidc-issuer", "id.example", "--oidc-client-id", "ss"}, nil, "is not an http(s) URL"},
		{[]string{"--oidc-issuer", "https://id.example", "--oidc-client-id", "ss", "--oidc-redirect-url", "https://ss.example/auth/callback"}, nil,
			"needs the client secret in SCENARIO_SERVER_OIDC_CLIENT_SECRET"},
		{[]string{"--oidc-issuer", "https://id.example", "--oidc-client-id", "ss", "--oidc-redirect-url", "ss.example"},
			map[string]string{envOIDCClientSecret: "x"}, "is not an http(s) URL"},
		{nil, map[string]string{envAuthTokens: "maybe"}, `SCENARIO_SERVER_AUTH_TOKENS="maybe" is not true or false`},
		{[]string{"--deploy-approval"}, nil, "usage: --deploy-approval needs authentication"},
		{nil, map[string]string{envDeployApproval: "true"}, "usage: --deploy-approval needs authentication"},
	} {
		_, err := parseServeFlags(tc.args, env(tc.env), io.Discard)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v; want a usage error with %q", tc.args, err, tc.want)
		}
	}
}

// checkReached takes loopback names, with or without brackets and ports, for this machine's,
// and refuses others without authentication (review: "[::1]" was refused).
func TestCheckReachedLoopbackNames(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		g    guardConfig
		fine bool
	}{
		{guardConfig{allowedHosts: "[::1]"}, true},
		{guardConfig{allowedHosts: "[::1]:8080,localhost:8080,127.0.0.1,::1,app.localhost"}, true},
		{guardConfig{publicURL: "http://[::1]:8080"}, true},
		{guardConfig{allowedHosts: "scenarios.internal"}, false},
		{guardConfig{publicURL: "https://scenarios.example.com"}, false},
		{guardConfig{proxies: "127.0.0.1"}, false},
	} {
		err := authConfig{}.checkReached(tc.g, log)
		if (err == nil) != tc.fine {
			t.Errorf("%+v: %v; want fine %v", tc.g, err, tc.fine)
		}
		if err := (authConfig{Tokens: true}).checkReached(tc.g, log); err != nil {
			t.Errorf("%+v with authentication: %v", tc.g, err)
		}
	}
}
