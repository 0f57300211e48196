package aggregate

// Every test of the package runs with the window operators letting go of their key tables as
// soon as no key and no slice is left (shrinkIfEmpty), whatever the number of slots, so that the
// property tests against the brute-force oracle go through it.
func init() { shrinkFrom = 1 }
