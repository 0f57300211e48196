package main

import (
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
)

// envCPUProfile names a file: when set, the process writes a CPU profile of itself there,
// from its start until it receives SIGUSR1 (scripts/bench.sh profiles the server with it).
const envCPUProfile = "SCENARIO_SERVER_CPUPROFILE"

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
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGUSR1)
	go func() {
		<-stop
		signal.Stop(stop)
		pprof.StopCPUProfile()
		f.Close()
	}()
}
