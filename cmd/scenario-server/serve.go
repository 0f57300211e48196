package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/scenario-server/scenario-server/api"
	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/store/postgres"
	"github.com/scenario-server/scenario-server/store/sqlite"
)

// The environment variables of serve. A flag, when given, wins over its variable.
const (
	envAddr         = "SCENARIO_SERVER_ADDR"
	envDataDir      = "SCENARIO_SERVER_DATA_DIR"
	envDatabaseURL  = "DATABASE_URL"
	envLogFormat    = "SCENARIO_SERVER_LOG_FORMAT"
	envLogLevel     = "SCENARIO_SERVER_LOG_LEVEL"
	envMaxBodyBytes = "SCENARIO_SERVER_MAX_BODY_BYTES"
)

// Defaults of serve.
const (
	defaultAddr            = "127.0.0.1:8080"
	defaultDataDir         = "./data"
	defaultShutdownTimeout = 10 * time.Second
)

// serveConfig is the configuration of serve, from flags and environment.
type serveConfig struct {
	// Addr is the host:port to listen on; port 0 picks a free port (logged).
	Addr string
	// DataDir holds the SQLite store when DatabaseURL is empty.
	DataDir string
	// DatabaseURL selects the PostgreSQL store when set.
	DatabaseURL string
	// LogFormat is "text" or "json"; logs go to stderr.
	LogFormat string
	LogLevel  slog.Level
	// MaxBodyBytes is the request body limit, in bytes.
	MaxBodyBytes int64
	// ShutdownTimeout is how long a shutdown waits for requests in flight.
	ShutdownTimeout time.Duration
}

func parseServeFlags(args []string, getenv func(string) string, stderr io.Writer) (serveConfig, error) {
	envOr := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	maxBody := int64(api.DefaultMaxBodyBytes)
	if v := getenv(envMaxBodyBytes); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return serveConfig{}, fmt.Errorf("%w: %s=%q is not a positive number of bytes", errUsage, envMaxBodyBytes, v)
		}
		maxBody = n
	}

	var cfg serveConfig
	var level string
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Addr, "addr", envOr(envAddr, defaultAddr), "listen on `host:port` (env "+envAddr+"); port 0 picks a free port")
	fs.StringVar(&cfg.DataDir, "data-dir", envOr(envDataDir, defaultDataDir), "keep the embedded SQLite store in `dir` (env "+envDataDir+"); unused when "+envDatabaseURL+" is set")
	fs.StringVar(&cfg.LogFormat, "log-format", envOr(envLogFormat, "text"), "log `format` on stderr: text or json (env "+envLogFormat+")")
	fs.StringVar(&level, "log-level", envOr(envLogLevel, "info"), "log `level`: debug, info, warn or error (env "+envLogLevel+")")
	fs.Int64Var(&cfg.MaxBodyBytes, "max-body-bytes", maxBody, "largest request body accepted, in `bytes` (env "+envMaxBodyBytes+")")
	fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", defaultShutdownTimeout, "on SIGINT or SIGTERM, wait this long for requests in flight")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: scenario-server [serve] [flags]\n\n"+
			"Serves the REST API (/api), its docs (/api/docs), /healthz, /readyz and /metrics.\n"+
			"The store is PostgreSQL when %s is set (a postgres:// URL), else SQLite in the data directory.\n\nFlags:\n", envDatabaseURL)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return serveConfig{}, err
		}
		return serveConfig{}, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return serveConfig{}, fmt.Errorf("%w: serve takes no arguments, got %q", errUsage, fs.Args())
	}
	if cfg.LogFormat != "text" && cfg.LogFormat != "json" {
		return serveConfig{}, fmt.Errorf("%w: log format %q: use text or json", errUsage, cfg.LogFormat)
	}
	if err := cfg.LogLevel.UnmarshalText([]byte(level)); err != nil {
		return serveConfig{}, fmt.Errorf("%w: log level %q: use debug, info, warn or error", errUsage, level)
	}
	if cfg.MaxBodyBytes <= 0 {
		return serveConfig{}, fmt.Errorf("%w: -max-body-bytes must be positive", errUsage)
	}
	cfg.DatabaseURL = getenv(envDatabaseURL)
	return cfg, nil
}

func newLogger(cfg serveConfig, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// openStore opens PostgreSQL when cfg.DatabaseURL is set, else SQLite in cfg.DataDir, and
// says which it opened, for the log (never the URL: it may hold a password).
func openStore(ctx context.Context, cfg serveConfig) (store.Store, []any, error) {
	if cfg.DatabaseURL != "" {
		s, err := postgres.Open(ctx, cfg.DatabaseURL)
		if err != nil {
			return nil, nil, fmt.Errorf("opening the PostgreSQL store (%s): %w", envDatabaseURL, err)
		}
		return s, []any{"store", "postgres"}, nil
	}
	s, err := sqlite.Open(ctx, cfg.DataDir)
	if err != nil {
		return nil, nil, fmt.Errorf("opening the SQLite store in %s: %w", cfg.DataDir, err)
	}
	return s, []any{"store", "sqlite", "dataDir", cfg.DataDir}, nil
}

// serve runs the HTTP server until ctx is cancelled, then shuts it down gracefully: it stops
// accepting, waits up to the shutdown timeout for requests in flight, and closes the store.
func serve(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	cfg, err := parseServeFlags(args, getenv, stderr)
	if err != nil {
		return err
	}
	log := newLogger(cfg, stderr)

	st, storeAttrs, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()

	handler, err := api.New(api.Config{
		Store:        st,
		Logger:       log,
		MaxBodyBytes: cfg.MaxBodyBytes,
		Version:      buildVersion(),
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.Addr, err)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("listening", append([]any{
		"addr", ln.Addr().String(),
		"url", "http://" + ln.Addr().String() + "/",
		"startup", time.Since(processStart).Round(time.Microsecond).String(),
	}, storeAttrs...)...)

	select {
	case err := <-served:
		return fmt.Errorf("serving HTTP: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down", "timeout", cfg.ShutdownTimeout.String())
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		srv.Close()
		return fmt.Errorf("shutting down: %w", err)
	}
	if err := st.Close(); err != nil {
		return fmt.Errorf("closing the store: %w", err)
	}
	log.Info("stopped")
	return nil
}

// buildVersion is the main module's version when built from a tagged module, else "dev".
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
