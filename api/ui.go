package api

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/scenario-server/scenario-server/web"
)

// serveUI serves the designer (package web) at /. Its build is a single page, index.html,
// with the script and styles inside, and it routes with the URL's fragment
// (#/scenarios/NAME), so / is the only route it needs: every other route is an API operation.
// The page is sent gzipped to clients that take it, with an ETag so that a reload costs a 304.
func serveUI(r chi.Router) error {
	page, err := fs.ReadFile(web.Dist(), "index.html")
	if err != nil {
		return fmt.Errorf("reading the designer's build: %w", err)
	}
	sum := sha256.Sum256(page)
	etag := `"` + hex.EncodeToString(sum[:12]) + `"`
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if err != nil {
		return err
	}
	if _, err := zw.Write(page); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	zipped := gz.Bytes()

	r.Get("/", func(w http.ResponseWriter, req *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", etag)
		h.Add("Vary", "Accept-Encoding")
		body := page
		if acceptsGzip(req) {
			h.Set("Content-Encoding", "gzip")
			body = zipped
		}
		http.ServeContent(w, req, "", time.Time{}, bytes.NewReader(body))
	})
	return nil
}

// acceptsGzip reports whether the request's Accept-Encoding takes gzip (without q=0).
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(name), "gzip") {
			return strings.ReplaceAll(strings.TrimSpace(params), " ", "") != "q=0"
		}
	}
	return false
}
