package engine

import (
	"os"
	"strings"
	"testing"
)

func TestZZAdvModes(t *testing.T) {
	scf, inf := os.Getenv("ADV_SC"), os.Getenv("ADV_IN")
	if scf == "" {
		t.Skip()
	}
	sc, _ := os.ReadFile(scf)
	in, _ := os.ReadFile(inf)
	out, errs, counts, lazy := runMode(t, sc, in, false)
	wOut, wErrs, wCounts, _ := runMode(t, sc, in, true)
	t.Logf("lazy=%v", lazy)
	same := counts == wCounts && strings.Join(errs, "\n") == strings.Join(wErrs, "\n") && strings.Join(out, "\n") == strings.Join(wOut, "\n")
	if !same {
		t.Errorf("DIFF\nlazy counts: %s\nwhole counts: %s\nlazy errs:\n%s\nwhole errs:\n%s\nlazy out:\n%s\nwhole out:\n%s", counts, wCounts, strings.Join(errs, "\n"), strings.Join(wErrs, "\n"), strings.Join(out, "\n"), strings.Join(wOut, "\n"))
	} else {
		t.Logf("SAME: %s\n%s", counts, strings.Join(out, "\n"))
	}
}
