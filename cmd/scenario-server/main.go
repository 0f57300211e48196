// Command scenario-server is the scenario server: it stores scenario graphs and their
// versions, validates them, and runs the deployed ones.
//
// Usage:
//
//	scenario-server [serve] [flags]   start the HTTP server (the default)
//	scenario-server run [flags]       replay a file of events through a scenario file
//	scenario-server token ...         create, list and revoke API tokens
//	scenario-server help              print this help
//
// Run "scenario-server serve -h" for the server's flags and environment variables.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"
)

// processStart is the process's start, as near as Go code sees it: the server logs how long
// it took from here to listening.
var processStart = time.Now()

// errUsage marks errors in the command line; main exits with status 2 on them.
var errUsage = errors.New("usage")

const usage = `scenario-server: a scenario server for streaming decisions.

Usage:
  scenario-server [serve] [flags]   start the HTTP server (the default)
  scenario-server run [flags]       replay a file of events through a scenario file
  scenario-server token ...         create, list and revoke API tokens
  scenario-server backup --to DIR   copy the SQLite store (and the server's files) while it runs
  scenario-server version           print the build's version and source revision
  scenario-server help              print this help

Run "scenario-server serve -h" for the server's flags and environment variables.
`

func main() {
	if limit, ok := runtimeMemoryLimit(os.Getenv, os.ReadFile); ok {
		debug.SetMemoryLimit(limit)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := runCommand(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	stopCPUProfile()
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "scenario-server:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "scenario-server:", err)
		os.Exit(1)
	}
}

// runCommand runs the subcommand named by args[0] ("serve" when args is empty or starts with
// a flag) until it ends or ctx is cancelled (SIGINT, SIGTERM). getenv reads the environment.
func runCommand(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	cmd, rest := "serve", args
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, rest = args[0], args[1:]
	}
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-version") {
		cmd = "version"
	}
	switch cmd {
	case "serve":
		return serve(ctx, rest, getenv, stderr)
	case "run":
		return runReplay(ctx, rest, stdin, stdout, stderr)
	case "token":
		return tokenCommand(ctx, rest, getenv, stdout, stderr)
	case "backup":
		return backupCommand(ctx, rest, getenv, stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, versionLine())
		return nil
	case "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("%w: unknown command %q", errUsage, cmd)
}

// versionLine says which build runs: the module's version ("dev" when built from a checkout)
// and the source revision Go recorded at build time (go build in a git checkout records it;
// go run does not), with its time, and "modified" when the checkout had changes. A new-user
// round found no way to tell which build a server was.
func versionLine() string {
	line := "scenario-server " + buildVersion()
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return line
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		line += " (revision " + rev
		if at := settings["vcs.time"]; at != "" {
			line += ", " + at
		}
		if settings["vcs.modified"] == "true" {
			line += ", modified"
		}
		line += ")"
	}
	return line + ", " + bi.GoVersion
}

// flagError is the usage error of fs.Parse's err, saying what a duration or a number flag
// takes when its value did not parse (the flag package says only "parse error": new-user
// round 136 tried --result-retention 30d and --max-state 1KB).
func flagError(fs *flag.FlagSet, err error) error {
	var name string
	if _, scanErr := fmt.Sscanf(afterValue(err.Error()), "for flag -%s", &name); scanErr == nil && strings.HasSuffix(err.Error(), "parse error") {
		name = strings.TrimSuffix(name, ":")
		if f := fs.Lookup(name); f != nil {
			if g, ok := f.Value.(flag.Getter); ok {
				switch g.Get().(type) {
				case time.Duration:
					return fmt.Errorf("%w: %v: --%s takes a duration such as 168h, 30m or 90s (there is no d: 7 days are 168h)", errUsage, err, name)
				case int, int64, uint, uint64:
					return fmt.Errorf("%w: %v: --%s takes a whole number, without a unit (bytes for sizes: 1048576 is 1 MiB)", errUsage, err, name)
				}
			}
		}
	}
	return fmt.Errorf("%w: %v", errUsage, err)
}

// afterValue is the part of a flag package error after its quoted value: `invalid value
// "30d" for flag -x: parse error` gives `for flag -x: parse error`.
func afterValue(msg string) string {
	if i := strings.LastIndex(msg, `" for flag -`); i >= 0 {
		return msg[i+2:]
	}
	return msg
}

// helpAsked reports whether args ask for a command's help (-h, -help, --h, --help): its
// usage is printed then, and not for every mistyped flag (the serve flags run to 200 lines).
func helpAsked(args []string) bool {
	for _, a := range args {
		switch a {
		case "-h", "-help", "--h", "--help":
			return true
		case "--", "-":
			return false
		}
	}
	return false
}
