package aggregate

import (
	"flag"
	"os"
	"testing"
)

// TestMain runs every test of the package with the window operators letting go of their key
// tables as soon as no key and no slice is left (shrinkIfEmpty), whatever the number of slots,
// so that the property tests against the brute-force oracle go through it; benchmarks keep the
// threshold the product has.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		shrinkFrom = 1
	}
	os.Exit(m.Run())
}
