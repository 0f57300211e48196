// Package web holds the designer, the browser UI of the scenario server, built with Vite from
// the React sources beside this file. The build output (dist/) is committed, so that the
// server embeds it and serves the designer without Node installed; scripts/test.sh rebuilds
// it and fails when the committed build is stale.
package web

import (
	"embed"
	"io/fs"
)

//go:embed all:dist
var dist embed.FS

// Dist returns the built designer: index.html, one page with its script and styles inside.
func Dist() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // "dist" is a valid path; fs.Sub fails only on invalid ones
	}
	return sub
}
