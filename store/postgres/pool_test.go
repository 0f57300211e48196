package postgres

import (
	"runtime"
	"testing"
)

// The pool has max(16, 4 × CPUs) connections unless the URL says how many (pool_max_conns):
// pgxpool's own max(4, CPUs) let a few reads waiting on a locked table hold them all.
func TestPoolSize(t *testing.T) {
	if got, want := openSchema(t, "").pool.Config().MaxConns, int32(max(16, 4*runtime.NumCPU())); got != want {
		t.Errorf("default pool: %d connections, want %d", got, want)
	}
	if got := openSchema(t, "&pool_max_conns=7").pool.Config().MaxConns; got != 7 {
		t.Errorf("pool_max_conns=7: %d connections", got)
	}
}
