// Package migrations embeds the SQL schema migrations of the store, one folder per database:
// sqlite/ for store/sqlite and postgres/ for store/postgres. Each file is a goose SQL migration
// (NNNNN_name.sql with "-- +goose Up" and "-- +goose Down" sections); the stores apply the
// pending ones when they open. Both folders have the same versions and describe the same
// tables, but for sink results: SQLite keeps them in result_chunks, a few rows per append
// (00012), PostgreSQL in sink_results, a row each (its 00012 changes nothing).
package migrations

import (
	"embed"
	"io/fs"
)

//go:embed sqlite/*.sql postgres/*.sql
var files embed.FS

// SQLite returns the migrations of store/sqlite, with the .sql files at the root.
func SQLite() fs.FS { return sub("sqlite") }

// Postgres returns the migrations of store/postgres, with the .sql files at the root.
func Postgres() fs.FS { return sub("postgres") }

func sub(dir string) fs.FS {
	f, err := fs.Sub(files, dir)
	if err != nil {
		panic(err) // unreachable: dir is a constant that the embed pattern guarantees exists
	}
	return f
}
