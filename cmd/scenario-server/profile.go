package main

import (
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"sync"
	"syscall"
)

// envCPUProfile names a file: when set, the process writes a CPU profile of itself there,
// from its start until it receives SIGUSR1 or its command returns (scripts/bench.sh
// profiles the server with it; `run` is profiled whole).
const envCPUProfile = "SCENARIO_SERVER_CPUPROFILE"

// stopCPUProfile ends the profile envCPUProfile started, if any; later calls do nothing.
var stopCPUProfile = func() {}

func init() {
	path := os.Getenv(envCPUProfile)
	if path == "" {
		return
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "scenario-server: %s: %v\n", envCPUProfile, err)
		return
	}
	var once sync.Once
	stopCPUProfile = func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			f.Close()
		})
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGUSR1)
	go func() {
		<-stop
		signal.Stop(stop)
		stopCPUProfile()
	}()
}
