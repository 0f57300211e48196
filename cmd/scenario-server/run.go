package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/scenario-server/scenario-server/engine"
	"github.com/scenario-server/scenario-server/scenario"
)

// maxErrorLines is how many per-event errors `run` prints before a count.
const maxErrorLines = 100

// runReplay is `scenario-server run`: it replays a file of events through a
// scenario file, judged in event time alone, and writes one JSON line per
// sink result, {"sink": "<sink node id>", "value": <value>}, to --output.
// Per-event errors go to stderr with their input line and node; a summary
// line ends stderr. An invalid scenario is an error with its problems.
func runReplay(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: scenario-server run --scenario FILE --input FILE|- [--output FILE|-]\n\n"+
			"Replays events (one JSON record a line) through a scenario and writes one line per sink result.\n\n")
		fs.PrintDefaults()
	}
	scenarioPath := fs.String("scenario", "", "the scenario, a JSON file (required)")
	inputPath := fs.String("input", "-", "the events, one JSON record a line; - reads standard input")
	outputPath := fs.String("output", "-", "where the results go; - writes standard output")
	name := fs.String("name", "", "the scenario's name, for #meta.scenarioName (default: the file name without extension)")
	maxState := fs.Int64("max-state", defaultRunMaxState(),
		"the run stops with an error when its aggregates' window state passes this many `bytes` (a deployment's budget, 1 GiB, and at most an eighth of the memory the process may use; 0: no budget)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
		return flagError(fs, err)
	}
	if *maxState < 0 {
		return fmt.Errorf("%w: --max-state must not be negative", errUsage)
	}
	if *scenarioPath == "" || fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("%w: --scenario is required and there are no positional arguments", errUsage)
	}
	// The replay reads and computes without looking at ctx: on SIGINT or
	// SIGTERM stop at once, as a command line tool does (exit status 130).
	// The caller cancels ctx once the run has returned (main's stop), when
	// finished is already closed: only a signal during the run exits. From
	// before the scenario is read: a named pipe nobody writes held the run
	// deaf to both signals (a hostile round).
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		select {
		case <-ctx.Done():
		case <-finished:
			return
		}
		select {
		case <-finished:
			return
		default:
		}
		fmt.Fprintln(stderr, "scenario-server run: interrupted")
		os.Exit(130)
	}()

	text, err := readScenarioFile(*scenarioPath)
	if err != nil {
		return err
	}
	s, err := scenario.Decode(text)
	if err != nil {
		var de *scenario.DecodeError
		if errors.As(err, &de) {
			for _, p := range de.Problems {
				fmt.Fprintf(stderr, "%s: %s\n", *scenarioPath, describeProblem(p))
			}
			// Listed above, one a line: the error counts them, as a validation error does.
			return fmt.Errorf("scenario %s does not decode: %d problem(s)", *scenarioPath, len(de.Problems))
		}
		return fmt.Errorf("decoding scenario %s: %w", *scenarioPath, err)
	}
	if *name == "" {
		*name = strings.TrimSuffix(filepath.Base(*scenarioPath), filepath.Ext(*scenarioPath))
	}
	in := stdin
	inputGiven := false
	fs.Visit(func(f *flag.Flag) { inputGiven = inputGiven || f.Name == "input" })
	if !inputGiven {
		// Without --input a run from a terminal would wait without a word (a new user).
		fmt.Fprintln(stderr, "reading events from standard input (--input FILE reads a file)")
	}
	if *inputPath != "-" {
		f, err := os.Open(*inputPath)
		if err != nil {
			return fmt.Errorf("opening the input: %w", err)
		}
		defer f.Close()
		in = f
	}
	out := stdout
	var outFile *os.File
	if *outputPath != "-" {
		outFile, err = os.Create(*outputPath)
		if err != nil {
			return fmt.Errorf("creating the output: %w", err)
		}
		defer outFile.Close()
		out = outFile
	}
	w := bufio.NewWriterSize(out, 1<<20)
	var outputs int64
	e, err := engine.New(s, engine.Options{ScenarioName: *name, Bounded: true, Output: engine.WriteOutput(w, &outputs), MaxStateBytes: *maxState})
	if err != nil {
		var inv *engine.InvalidError
		if errors.As(err, &inv) {
			for _, p := range inv.Validation.Errors {
				fmt.Fprintf(stderr, "%s: %s\n", *scenarioPath, describeProblem(p))
			}
			return fmt.Errorf("scenario %s has %d error(s)", *scenarioPath, len(inv.Validation.Errors))
		}
		return err
	}
	// The validation's warnings, as the designer and /api/validation show them (a Count's
	// aggregateBy ignored went unseen by a new user of run).
	for _, p := range e.Validation().Warnings {
		fmt.Fprintf(stderr, "warning: %s: %s\n", *scenarioPath, describeProblem(p))
	}
	sum, err := engine.Replay(context.WithoutCancel(ctx), e, in)
	if ferr := w.Flush(); ferr != nil && err == nil {
		err = fmt.Errorf("writing the output: %w", ferr)
	}
	if outFile != nil {
		if cerr := outFile.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("writing the output: %w", cerr)
		}
	}
	sum.Outputs = outputs
	errs, total := e.Errors()
	for i, ee := range errs {
		if i == maxErrorLines {
			fmt.Fprintf(stderr, "... and %d more errors\n", total-int64(i))
			break
		}
		fmt.Fprintf(stderr, "error: %s\n", ee.String())
	}
	for _, id := range e.Sources() {
		if hint := e.TimeHint(id); hint != "" {
			fmt.Fprintf(stderr, "warning: source %q: %s\n", id, hint)
		}
	}
	fmt.Fprintf(stderr, "summary: %s\n", sum.String())
	if err == nil {
		err = noneIn(sum, e.Sources())
	}
	return err
}

// noneIn returns an error when the input had events and every one failed at its source (its
// timestamp, its schema): nothing went into the scenario, as with the wrong input file (a
// new-user round: the flights scenario on the access log printed 100 errors and exited 0).
func noneIn(sum engine.Summary, sources []string) error {
	var in, failed int64
	for _, id := range sources {
		in += sum.Counts[id].In
		failed += sum.Counts[id].Errors
	}
	if in == 0 || failed < in {
		return nil
	}
	return fmt.Errorf("every one of the %d events failed at the source, none went into the scenario: is the input the scenario's? (the errors above say why)", in)
}

// describeProblem formats a validation problem for the terminal.
func describeProblem(p scenario.Problem) string {
	var b strings.Builder
	if p.NodeID != "" {
		fmt.Fprintf(&b, "node %q", p.NodeID)
	}
	if p.Field != "" {
		fmt.Fprintf(&b, " field %q", p.Field)
	}
	if p.Line > 0 {
		fmt.Fprintf(&b, " at %d:%d", p.Line, p.Column)
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	if p.Code != "" {
		fmt.Fprintf(&b, " [%s]", p.Code)
	}
	return strings.TrimSpace(b.String())
}

// maxRunScenarioBytes bounds the scenario file `run` reads: a scenario the server takes is at
// most its request body limit (10 MiB by default).
const maxRunScenarioBytes = 64 << 20

// readScenarioFile reads the scenario file at path, refusing one larger than
// maxRunScenarioBytes before reading it all (a hostile round: a 300 MB file took 614 MB
// of memory to be refused).
func readScenarioFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the scenario: %w", err)
	}
	defer f.Close()
	text, err := io.ReadAll(io.LimitReader(f, maxRunScenarioBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the scenario: %w", err)
	}
	if len(text) > maxRunScenarioBytes {
		return nil, fmt.Errorf("reading the scenario: %s is larger than %d MiB; a scenario is a graph of nodes, not data", path, maxRunScenarioBytes>>20)
	}
	return text, nil
}
