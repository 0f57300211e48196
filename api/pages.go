package api

import (
	"context"

	"github.com/scenario-server/scenario-server/value"
)

// Pages of history (versions, deployments, every scenario's status) carry text their writers
// chose: comments of up to 10,000 characters (40 KB in UTF-8), reasons, names. A page of 1,000
// versions with such comments was 40 MB, and 100 clients asking for it and reading nothing
// held 3 GB until the server ran out of memory (found by a hostile client). holdPage cuts
// such a page at maxPageBytes (keeping at least one entry; the page's cursor then points after
// the last kept, so nothing is skipped) and counts what is kept in the request's budget
// (holdLoaded) until it is answered, as a page of results is.
const (
	maxPageBytes = 4 << 20
	// pageEntryBytes is what an entry is counted beside its text: its other fields and the
	// JSON around them.
	pageEntryBytes = 256
)

// jsonTextBytes is how many bytes the strings ss take as JSON strings' contents in an
// answer, at most (value.JSONStringBytes each). Counted as their bytes alone, 20 comments of
// 10,000 control characters answered 1.2 MB for 205 KB counted (found by review).
func jsonTextBytes(ss ...string) int {
	n := 0
	for _, s := range ss {
		n += value.JSONStringBytes(s)
	}
	return n
}

// holdPage returns how many of n entries a page keeps, given each entry's text bytes, after
// counting their bytes in the request's budget. Errors: holdLoaded's 503 requests-busy.
func holdPage(ctx context.Context, n int, text func(i int) int) (int, error) {
	keep, total := 0, 0
	for keep < n {
		b := pageEntryBytes + text(keep)
		if keep > 0 && total+b > maxPageBytes {
			break
		}
		total += b
		keep++
	}
	if err := holdLoaded(ctx, total); err != nil {
		return 0, err
	}
	return keep, nil
}
