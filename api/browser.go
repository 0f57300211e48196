package api

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io/fs"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/scenario-server/scenario-server/web"
)

// The codes of the browser checks (see browserSafety).
const (
	// CodeHostNotAllowed (421): the Host header names neither the server's public URL, nor an
	// allowed host, nor a loopback address with the port the server listens on: a page
	// reached through another name (DNS rebinding) must not reach the API.
	CodeHostNotAllowed = "host-not-allowed"
	// CodeCrossOrigin (403): the request's Origin is not the server's own: another site's
	// page sent it.
	CodeCrossOrigin = "cross-origin"
)

// BrowserConfig is what the browser checks accept.
type BrowserConfig struct {
	// PublicURL is the address users reach the server at ("https://scenarios.example.com");
	// its host is an accepted Host and its origin an accepted Origin. Empty: only loopback
	// names, AllowedHosts and the address the connection arrived on are accepted.
	PublicURL string
	// AllowedHosts are more accepted Host headers: "name" (any port) or "name:port".
	AllowedHosts []string
}

// browserGuard holds what browserSafety checks against.
type browserGuard struct {
	publicOrigin string // scheme://host[:port] of the public URL, lower case; "" without one
	publicHost   string // host[:port] of the public URL, lower case
	allowed      []string
	csp          string
}

func newBrowserGuard(cfg BrowserConfig) (*browserGuard, error) {
	g := &browserGuard{}
	if cfg.PublicURL != "" {
		u, err := url.Parse(cfg.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("public URL %q: want http(s)://host[:port]", cfg.PublicURL)
		}
		g.publicHost = strings.ToLower(u.Host)
		g.publicOrigin = strings.ToLower(u.Scheme + "://" + u.Host)
	}
	for _, h := range cfg.AllowedHosts {
		h = strings.ToLower(strings.TrimSpace(h))
		if h == "" {
			continue
		}
		if strings.ContainsAny(h, "/ ") {
			return nil, fmt.Errorf("allowed host %q: want name or name:port", h)
		}
		g.allowed = append(g.allowed, h)
	}
	csp, err := contentSecurityPolicy()
	if err != nil {
		return nil, err
	}
	g.csp = csp
	return g, nil
}

// contentSecurityPolicy allows the designer and the docs page and nothing else: their inline
// scripts by hash (no other script runs, whatever gets into a page), styles inline (React
// and CodeMirror set them), connections to this server only, and no framing.
func contentSecurityPolicy() (string, error) {
	page, err := fs.ReadFile(web.Dist(), "index.html")
	if err != nil {
		return "", fmt.Errorf("reading the designer's build: %w", err)
	}
	hashes := inlineScriptHashes(string(page))
	hashes = append(hashes, inlineScriptHashes(docsPage)...)
	return "default-src 'self'; script-src 'self' " + strings.Join(hashes, " ") +
		"; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; font-src 'self'" +
		"; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'", nil
}

// inlineScriptHashes returns the CSP hash source ('sha256-...') of each inline <script>
// element of page. An element ends at the first "</script" after its start tag, as HTML
// parses it (the builds escape that sequence inside code).
func inlineScriptHashes(page string) []string {
	var out []string
	lower := strings.ToLower(page)
	for i := 0; ; {
		start := strings.Index(lower[i:], "<script")
		if start < 0 {
			return out
		}
		start += i
		open := strings.IndexByte(lower[start:], '>')
		if open < 0 {
			return out
		}
		bodyStart := start + open + 1
		end := strings.Index(lower[bodyStart:], "</script")
		if end < 0 {
			return out
		}
		body := page[bodyStart : bodyStart+end]
		if !strings.Contains(lower[start:bodyStart], " src=") {
			sum := sha256.Sum256([]byte(body))
			out = append(out, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'")
		}
		i = bodyStart + end + len("</script")
	}
}

// browserSafety sets the security headers on every answer and refuses what a web page of
// another site, or one reached through a name that is not the server's, could send:
//
//   - a Host that is not the public URL's, an allowed host, a loopback name or address with
//     the port the connection arrived on, or the connection's own local address: 421
//     host-not-allowed (DNS rebinding). /healthz and /readyz are exempt (probes use any
//     name), and so is a request that came over no connection (an in-process call);
//   - an Origin that is not the server's own: 403 cross-origin;
//   - a POST, PUT, PATCH or DELETE whose Content-Type is not JSON (application/json,
//     application/*+json; application/x-ndjson for events and test records), with or
//     without a body: 415 unsupported-media-type (a form or text/plain is what another
//     site's page can send without asking first). A request without Content-Type and body
//     passes: no browser sends one cross-site without an Origin.
func (g *browserGuard) browserSafety(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", g.csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")

		if r.URL.Path != "/healthz" && r.URL.Path != "/readyz" {
			if ok, port := g.hostAllowed(r); !ok && port != "" {
				writeProblem(w, problemf(http.StatusMisdirectedRequest, CodeHostNotAllowed,
					"host %q is not this server's: a loopback name or the server's own address is accepted with the port the request came to (%s:%s); other names need --public-url or --allowed-hosts", r.Host, hostName(r.Host), port))
				return
			} else if !ok {
				writeProblem(w, problemf(http.StatusMisdirectedRequest, CodeHostNotAllowed,
					"host %q is not this server's; configure it with --public-url or --allowed-hosts", r.Host))
				return
			}
		}
		if origin := r.Header.Get("Origin"); origin != "" && !g.originAllowed(origin, r) {
			writeProblem(w, problemf(http.StatusForbidden, CodeCrossOrigin,
				"requests from origin %q are not accepted: the designer must be served by this server", origin))
			return
		}
		if changesState(r.Method) {
			if ct := r.Header.Get("Content-Type"); ct != "" && !jsonBodyType(ct, r.URL.Path) {
				also := ""
				if isEventsPath(r.URL.Path) || isSavedTestPath(r.URL.Path) {
					also = " or " + ndjson
				}
				writeProblem(w, problemf(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType,
					"a %s must send Content-Type application/json%s; it sent %s", r.Method, also, ct))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func changesState(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// jsonBodyType reports whether ct is a JSON media type, or application/x-ndjson on the
// events and test paths.
func jsonBodyType(ct, path string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	if mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")) {
		return true
	}
	return mt == ndjson && (isEventsPath(path) || isTestPath(path))
}

// hostAllowed reports whether r's Host is one of the server's names (see browserSafety). When
// it is not but its name is a local one (localhost, a loopback address, the connection's own
// address) with another port or none, port is the one it is accepted with.
func (g *browserGuard) hostAllowed(r *http.Request) (ok bool, port string) {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return true, "" // an in-process call: no connection, no DNS
	}
	host := strings.ToLower(r.Host)
	if host == "" {
		return false, ""
	}
	if g.publicHost != "" && host == g.publicHost {
		return true, ""
	}
	name, hostPort, err := net.SplitHostPort(host)
	if err != nil {
		name = strings.Trim(host, "[]")
		hostPort = "80"
		if r.TLS != nil {
			hostPort = "443"
		}
	}
	for _, a := range g.allowed {
		if a == host || a == name {
			return true, ""
		}
	}
	_, localPort, err := net.SplitHostPort(local.String())
	if err != nil {
		return false, ""
	}
	if !localName(name, local) {
		return false, ""
	}
	if hostPort != localPort {
		return false, localPort
	}
	return true, ""
}

// localName reports whether name is localhost, a loopback address or the address the
// connection arrived on (local): a DNS-rebinding page names a host, never the server's own
// IP address.
func localName(name string, local net.Addr) bool {
	if name == "localhost" {
		return true
	}
	ip := net.ParseIP(name)
	if ip == nil {
		return false
	}
	if ip.IsLoopback() {
		return true
	}
	tcp, ok := local.(*net.TCPAddr)
	return ok && tcp.IP.Equal(ip)
}

// hostName is a Host header's name, without its port, IPv6 addresses in brackets.
func hostName(host string) string {
	if name, _, err := net.SplitHostPort(host); err == nil {
		host = name
	}
	host = strings.Trim(host, "[]")
	if strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	return host
}

// originAllowed reports whether origin is the server's own: the public URL's origin, or an
// http(s) origin whose host is the request's Host (which hostAllowed has accepted). A request
// that came over TLS needs an https origin: a plain-HTTP page of the same host (which anyone
// on the path can write) is another origin. Without TLS both schemes pass, as a reverse proxy
// may have ended TLS in front of the server.
func (g *browserGuard) originAllowed(origin string, r *http.Request) bool {
	origin = strings.ToLower(origin)
	if g.publicOrigin != "" && origin == g.publicOrigin {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" {
		return false // "null" (a sandboxed or privacy-sensitive context) included
	}
	if r.TLS != nil && u.Scheme != "https" {
		return false
	}
	return u.Host == strings.ToLower(r.Host)
}
