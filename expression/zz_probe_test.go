package expression

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
)

func TestZZCompileCost(t *testing.T) {
	runtime.MemProfileRate = 1
	fields := make([]Field, 9000)
	for i := range fields {
		fields[i] = Field{Name: fmt.Sprintf("f%d", i), Type: Integer}
	}
	env := TypeEnv{"r0": RecordOf(fields...), "input": RecordOf(Field{Name: "x", Type: Integer})}
	var keep []*Program
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	for i := 0; i < 20; i++ {
		p, probs := Compile("#r0", env, Unknown)
		if len(probs) > 0 {
			t.Fatal(probs)
		}
		keep = append(keep, p)
	}
	runtime.ReadMemStats(&ms1)
	alloc := ms1.TotalAlloc - ms0.TotalAlloc
	runtime.GC()
	runtime.ReadMemStats(&ms1)
	t.Logf("per compile: %d bytes allocated, %d kept", alloc/20, (int64(ms1.HeapAlloc)-int64(ms0.HeapAlloc))/20)
	f, _ := os.Create("/tmp/heap.prof")
	pprof.WriteHeapProfile(f)
	f.Close()
	runtime.KeepAlive(keep)
}
