package engine

import (
	"bytes"
	"os"
	"testing"

	"github.com/scenario-server/scenario-server/scenario"
)

func TestZZAdvSnap(t *testing.T) {
	scf, inf := os.Getenv("ADV_SC"), os.Getenv("ADV_IN")
	if scf == "" {
		t.Skip()
	}
	text, _ := os.ReadFile(scf)
	data, _ := os.ReadFile(inf)
	s, err := scenario.Decode(text)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	whole, _ := runLines(t, s, lines, 1, nil, true)
	for cut := 1; cut < len(lines); cut += 1 + len(lines)/17 {
		before, e := runLines(t, s, lines[:cut], 1, nil, false)
		snap := e.AppendSnapshot(nil)
		after, _ := runLines(t, s, lines[cut:], int64(cut+1), snap, true)
		if before+after != whole {
			t.Errorf("cut %d differs:\n%s\nvs\n%s", cut, before+after, whole)
			return
		}
	}
	t.Logf("ok %d bytes", len(whole))
}
