package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/scenario-server/scenario-server/api"
	"github.com/scenario-server/scenario-server/auth"
	"github.com/scenario-server/scenario-server/deploy"
	"github.com/scenario-server/scenario-server/examples"
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

	envCheckpointInterval = "SCENARIO_SERVER_CHECKPOINT_INTERVAL"
	envMaxBacklog         = "SCENARIO_SERVER_MAX_BACKLOG"
	envMaxBacklogBytes    = "SCENARIO_SERVER_MAX_BACKLOG_BYTES"
	envMaxDeploymentState = "SCENARIO_SERVER_MAX_DEPLOYMENT_STATE"
	envMaxTotalState      = "SCENARIO_SERVER_MAX_TOTAL_STATE"
	envLargeEventBytes    = "SCENARIO_SERVER_LARGE_EVENT_BYTES"
	envEventMemory        = "SCENARIO_SERVER_EVENT_MEMORY"
	envMaxDeployments     = "SCENARIO_SERVER_MAX_DEPLOYMENTS"
	envMaxNodeSeries      = "SCENARIO_SERVER_MAX_NODE_SERIES"
	envMaxDeadLetters     = "SCENARIO_SERVER_MAX_DEAD_LETTERS"
	envMaxResultBytes     = "SCENARIO_SERVER_MAX_RESULT_BYTES"
	envMaxTotalResults    = "SCENARIO_SERVER_MAX_TOTAL_RESULT_BYTES"
	envMinFreeDisk        = "SCENARIO_SERVER_MIN_FREE_DISK"
	envSinkDir            = "SCENARIO_SERVER_SINK_DIR"
	envSourceDir          = "SCENARIO_SERVER_SOURCE_DIR"
	envKafkaBrokers       = "SCENARIO_SERVER_KAFKA_BROKERS"
	envResultRetention    = "SCENARIO_SERVER_RESULT_RETENTION"
	envBatchKeyRetention  = "SCENARIO_SERVER_BATCH_KEY_RETENTION"
	envAuditRetention     = "SCENARIO_SERVER_AUDIT_RETENTION"

	envNoResume       = "SCENARIO_SERVER_NO_RESUME"
	envTakeOver       = "SCENARIO_SERVER_TAKE_OVER"
	envCrashLoopLimit = "SCENARIO_SERVER_CRASH_LOOP_LIMIT"

	envTestMaxRecords = "SCENARIO_SERVER_TEST_MAX_RECORDS"
	envTestMaxBytes   = "SCENARIO_SERVER_TEST_MAX_BYTES"
	envTestTimeout    = "SCENARIO_SERVER_TEST_TIMEOUT"

	envAnswerWriteTimeout = "SCENARIO_SERVER_ANSWER_WRITE_TIMEOUT"
)

// Defaults of serve.
const (
	defaultAddr            = "127.0.0.1:8080"
	defaultDataDir         = "./data"
	defaultShutdownTimeout = 10 * time.Second
	// Collected results are kept a week (as Kafka keeps a topic's records by default), and
	// batch keys a day: clients re-send a batch within minutes.
	defaultResultRetention   = 7 * 24 * time.Hour
	defaultBatchKeyRetention = 24 * time.Hour
	// The audit log is kept 400 days: a year of audits, such as PCI DSS asks for (10.5.1),
	// with a month to spare; an identity reading results in a loop adds about 100 MB an hour.
	defaultAuditRetention = 400 * 24 * time.Hour
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
	// ShutdownTimeout is how long a shutdown waits for requests in flight, and then for the
	// deployments' final checkpoints.
	ShutdownTimeout time.Duration
	// MaxConnections is how many client connections the server holds open at once; 0: no bound.
	MaxConnections int
	// CheckpointInterval is how often running deployments checkpoint; 0 means
	// deploy.DefaultCheckpointInterval.
	CheckpointInterval time.Duration
	// EventTimeout is how long one event may go through a deployment's graph before it is
	// abandoned (deploy.Config.EventTimeout); 0: no limit.
	EventTimeout time.Duration
	// MaxBacklog is the per-source backlog of accepted, unprocessed events at which ingestion
	// answers 429; 0 means deploy.DefaultMaxBacklog.
	MaxBacklog int64
	// MaxBacklogBytes is the same in bytes of events (deploy.Config.MaxBacklogBytes); 0 means
	// deploy.DefaultMaxBacklogBytes, negative none.
	MaxBacklogBytes int64
	// MaxDeploymentState is the most window state, in bytes, a deployment may hold before it
	// fails; 0 means no budget.
	MaxDeploymentState int64
	// MaxTotalState is the most window state, in bytes, of all deployments together
	// (deploy.Config.MaxTotalState); 0 means no budget.
	MaxTotalState int64
	// LargeEventBytes is the most bytes of large events all deployments decode and push at
	// once (deploy.Config.LargeEventBytes); 0 means no bound.
	LargeEventBytes int64
	// EventMemory is the most memory the events of all deployments take at once by what their
	// expressions make (deploy.Config.EventMemoryBytes); 0 means no bound.
	EventMemory int64
	// MaxDeployments is the most scenarios the server runs at once
	// (deploy.Config.MaxDeployments); 0 means no bound.
	MaxDeployments int
	// MaxNodeSeries is the most per-node series a /metrics scrape gathers
	// (deploy.Config.MaxNodeSeries); 0 means no bound.
	MaxNodeSeries int
	// MaxDeadLetters is the most dead letters a deployment keeps an hour
	// (deploy.Config.MaxDeadLettersPerHour); 0 means no bound.
	MaxDeadLetters int
	// MaxResultBytes is the most bytes of collected results (and dead letters) a scenario
	// keeps (deploy.Config.MaxResultBytes); 0 means no bound.
	MaxResultBytes int64
	// MaxTotalResultBytes is the most bytes of collected results all scenarios keep together
	// (deploy.Config.MaxTotalResultBytes); 0 means no bound.
	MaxTotalResultBytes int64
	// MinFreeDisk is how many bytes a SQLite store's disk keeps free: with less, event
	// batches are refused (deploy.Config.MinFreeDisk); 0 means no bound.
	MinFreeDisk int64
	// SinkDir is where deployed file sinks write; empty means DataDir/sinks.
	SinkDir string
	// SourceDir is where deployed file sources read; empty means DataDir/sources.
	SourceDir string
	// KafkaBrokers are the seed brokers of Kafka sources and sinks, comma-separated host:port.
	KafkaBrokers string
	// Kafka is the client id, TLS and SASL of the connections to KafkaBrokers (kafkaflags.go).
	Kafka deploy.KafkaCluster
	// ResultRetention and BatchKeyRetention: how long collected results and the keys of
	// ingested batches are kept (0: for ever); see deploy.Config.
	ResultRetention   time.Duration
	BatchKeyRetention time.Duration
	// AuditRetention is how long the audit log's entries are kept (0: for ever).
	AuditRetention time.Duration
	// TestMaxRecords is the most records a test run takes; 0 means api.DefaultTestMaxRecords.
	TestMaxRecords int
	// TestMaxBytes is the largest request body of a test run, in bytes; 0 means
	// api.DefaultTestMaxBytes.
	TestMaxBytes int64
	// TestTimeout is how long one test run may take; 0 means api.DefaultTestTimeout.
	TestTimeout time.Duration
	// AnswerWriteTimeout is how long a client has to take an answer (api.Config); 0 means
	// api.DefaultAnswerWriteTimeout.
	AnswerWriteTimeout time.Duration
	// NoResume starts in safe mode: no deployment is resumed (deploy.Config.NoResume).
	NoResume bool
	// TakeOver runs the deployments of servers sharing the store that are gone
	// (deploy.Config.TakeOver).
	TakeOver bool
	// CrashLoopLimit: a deployment during whose runs the server died this many times in a
	// row is marked FAILED instead of resumed; 0 resumes whatever happened.
	CrashLoopLimit int
	// Auth is authentication, the listening posture and TLS.
	Auth authConfig
	// Guard is the browser checks, the trusted proxies and the rate limits.
	Guard guardConfig
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
	var checkpointInterval time.Duration
	if v := getenv(envCheckpointInterval); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return serveConfig{}, fmt.Errorf("%w: %s=%q is not a duration such as 1s", errUsage, envCheckpointInterval, v)
		}
		checkpointInterval = d
	}
	maxBacklog, err := envInt(getenv, envMaxBacklog)
	if err != nil {
		return serveConfig{}, err
	}
	maxBacklogBytes, err := envInt(getenv, envMaxBacklogBytes)
	if err != nil {
		return serveConfig{}, err
	}
	maxState := int64(deploy.DefaultMaxDeploymentState)
	if getenv(envMaxDeploymentState) != "" {
		if maxState, err = envInt(getenv, envMaxDeploymentState); err != nil {
			return serveConfig{}, err
		}
	}
	maxTotalState := defaultMaxTotalState()
	if getenv(envMaxTotalState) != "" {
		if maxTotalState, err = envInt(getenv, envMaxTotalState); err != nil {
			return serveConfig{}, err
		}
	}
	largeEventBytes := defaultLargeEventBytes()
	if getenv(envLargeEventBytes) != "" {
		if largeEventBytes, err = envInt(getenv, envLargeEventBytes); err != nil {
			return serveConfig{}, err
		}
	}
	eventMemory := defaultEventMemory()
	if getenv(envEventMemory) != "" {
		if eventMemory, err = envInt(getenv, envEventMemory); err != nil {
			return serveConfig{}, err
		}
	}
	maxDeployments := defaultMaxDeployments()
	if getenv(envMaxDeployments) != "" {
		n, err := envInt(getenv, envMaxDeployments)
		if err != nil {
			return serveConfig{}, err
		}
		maxDeployments = int(min(n, math.MaxInt32))
	}
	maxNodeSeries := deploy.DefaultMaxNodeSeries
	if getenv(envMaxNodeSeries) != "" {
		n, err := envInt(getenv, envMaxNodeSeries)
		if err != nil {
			return serveConfig{}, err
		}
		maxNodeSeries = int(min(n, math.MaxInt32))
	}
	maxDeadLetters := deploy.DefaultMaxDeadLettersPerHour
	if getenv(envMaxDeadLetters) != "" {
		n, err := envInt(getenv, envMaxDeadLetters)
		if err != nil {
			return serveConfig{}, err
		}
		maxDeadLetters = int(min(n, math.MaxInt32))
	}
	maxResultBytes := int64(deploy.DefaultMaxResultBytes)
	if getenv(envMaxResultBytes) != "" {
		if maxResultBytes, err = envInt(getenv, envMaxResultBytes); err != nil {
			return serveConfig{}, err
		}
	}
	maxTotalResults := int64(deploy.DefaultMaxTotalResultBytes)
	if getenv(envMaxTotalResults) != "" {
		if maxTotalResults, err = envInt(getenv, envMaxTotalResults); err != nil {
			return serveConfig{}, err
		}
	}
	minFreeDisk := int64(defaultMinFreeDisk)
	if getenv(envMinFreeDisk) != "" {
		if minFreeDisk, err = envInt(getenv, envMinFreeDisk); err != nil {
			return serveConfig{}, err
		}
	}
	testMaxRecords, err := envInt(getenv, envTestMaxRecords)
	if err != nil {
		return serveConfig{}, err
	}
	testMaxBytes, err := envInt(getenv, envTestMaxBytes)
	if err != nil {
		return serveConfig{}, err
	}
	var testTimeout time.Duration
	if v := getenv(envTestTimeout); v != "" {
		testTimeout, err = time.ParseDuration(v)
		if err != nil || testTimeout < 0 {
			return serveConfig{}, fmt.Errorf("%w: %s=%q is not a duration such as 30s", errUsage, envTestTimeout, v)
		}
	}
	answerWriteTimeout, err := envDuration(getenv, envAnswerWriteTimeout, 0)
	if err != nil {
		return serveConfig{}, err
	}
	resultRetention, err := envDuration(getenv, envResultRetention, defaultResultRetention)
	if err != nil {
		return serveConfig{}, err
	}
	batchKeyRetention, err := envDuration(getenv, envBatchKeyRetention, defaultBatchKeyRetention)
	if err != nil {
		return serveConfig{}, err
	}
	auditRetention, err := envDuration(getenv, envAuditRetention, defaultAuditRetention)
	if err != nil {
		return serveConfig{}, err
	}

	noResume := false
	if v := getenv(envNoResume); v != "" {
		if noResume, err = strconv.ParseBool(v); err != nil {
			return serveConfig{}, fmt.Errorf("%w: %s=%q is not true or false", errUsage, envNoResume, v)
		}
	}
	takeOver := true
	if v := getenv(envTakeOver); v != "" {
		if takeOver, err = strconv.ParseBool(v); err != nil {
			return serveConfig{}, fmt.Errorf("%w: %s=%q is not true or false", errUsage, envTakeOver, v)
		}
	}
	crashLoopLimit := int64(deploy.DefaultCrashLoopLimit)
	if getenv(envCrashLoopLimit) != "" {
		if crashLoopLimit, err = envInt(getenv, envCrashLoopLimit); err != nil {
			return serveConfig{}, err
		}
	}

	var cfg serveConfig
	var level string
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := cfg.Auth.register(fs, getenv); err != nil {
		return serveConfig{}, err
	}
	cfg.Guard.register(fs, getenv)
	if err := registerKafkaFlags(fs, getenv, &cfg.Kafka); err != nil {
		return serveConfig{}, err
	}
	fs.StringVar(&cfg.Addr, "addr", envOr(envAddr, defaultAddr), "listen on `host:port` (env "+envAddr+"); port 0 picks a free port")
	fs.StringVar(&cfg.DataDir, "data-dir", envOr(envDataDir, defaultDataDir), "the server's `dir`: the embedded SQLite store (but when "+envDatabaseURL+" is set), and its lock, server-id, session key, and the file sources' and sinks' directories (env "+envDataDir+"; two servers need two)")
	fs.StringVar(&cfg.LogFormat, "log-format", envOr(envLogFormat, "text"), "log `format` on stderr: text or json (env "+envLogFormat+")")
	fs.StringVar(&level, "log-level", envOr(envLogLevel, "info"), "log `level`: debug, info, warn or error (env "+envLogLevel+")")
	fs.Int64Var(&cfg.MaxBodyBytes, "max-body-bytes", maxBody, "largest request body accepted, in `bytes` (env "+envMaxBodyBytes+")")
	fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", defaultShutdownTimeout, "on SIGINT or SIGTERM, wait this long for requests in flight")
	fs.IntVar(&cfg.MaxConnections, "max-connections", defaultMaxConnections(),
		"hold at most `n` client connections open at once; a new one closes the keep-alive connection idle the longest, or waits when none is idle (default: three quarters of the process's open-file limit, the rest kept for the store, sinks and Kafka, and at most an eighth of the memory at 160 KiB a connection; 0: no bound)")
	fs.DurationVar(&cfg.CheckpointInterval, "checkpoint-interval", checkpointInterval,
		fmt.Sprintf("running deployments checkpoint their state and results this often (env %s; 0: %v)", envCheckpointInterval, deploy.DefaultCheckpointInterval))
	fs.DurationVar(&cfg.EventTimeout, "event-timeout", deploy.DefaultEventTimeout,
		"an event that goes through a deployment's graph for longer than this is abandoned at the next node it enters, with a per-event error and a dead letter there; the windows its watermark closes are not abandoned (0: no limit)")
	fs.Int64Var(&cfg.MaxBacklog, "max-backlog", maxBacklog,
		fmt.Sprintf("ingestion answers 429 once a source has `n` accepted events waiting (env %s; 0: %d)", envMaxBacklog, deploy.DefaultMaxBacklog))
	fs.Int64Var(&cfg.MaxBacklogBytes, "max-backlog-bytes", maxBacklogBytes,
		fmt.Sprintf("ingestion answers 429 once the events this server accepted for a source and its deployment has not read take `bytes` (env %s; 0: %d; -1: none)", envMaxBacklogBytes, deploy.DefaultMaxBacklogBytes))
	fs.Int64Var(&cfg.MaxDeploymentState, "max-deployment-state", maxState,
		"a deployment whose aggregates' window state passes this many `bytes` fails, keeping its last checkpoint (env "+envMaxDeploymentState+"; 0: no budget)")
	fs.Int64Var(&cfg.MaxTotalState, "max-total-state", maxTotalState,
		"when all deployments' window state together passes this many `bytes`, the deployment whose state grew fails, keeping its last checkpoint, if it holds more than its share (this over the deployments running), and else the one holding the most; so does the one whose collect results would bring those waiting for checkpoints in all deployments past as many (env "+envMaxTotalState+
			"; default: an eighth of the memory the server may use, the least of its cgroup's limit, the machine's and GOMEMLIMIT; 0: no budget)")
	fs.Int64Var(&cfg.LargeEventBytes, "large-event-bytes", largeEventBytes,
		fmt.Sprintf("the deployments together decode and run at most this many `bytes` of events of %d bytes or more at once, each counted at most a quarter of it; a deployment whose next such event would pass it waits (env %s; default: a 256th of the memory the server may use, 64 MiB when it is not known; 0: no bound)", deploy.LargeEvent, envLargeEventBytes))
	fs.Int64Var(&cfg.EventMemory, "event-memory", eventMemory,
		"the events of all deployments take at most this many `bytes` at once by what their expressions make: an event of a scenario with an expression run by expr takes what its variables may hold and one run may make (112 MiB), at most a quarter of this, while it goes through its graph; a deployment whose next event would pass it waits (env "+envEventMemory+
			"; default: a quarter of the memory the server may use, 1 GiB when it is not known; 0: no bound)")
	fs.IntVar(&cfg.MaxDeployments, "max-deployments", maxDeployments,
		"deploying one more scenario than `n` running is refused with 409 too-many-deployments (a scenario counts once for each 16 MiB its compiled expressions keep; a new version of a running one replaces it; those resumed at start are not refused) (env "+envMaxDeployments+
			"; default: one per 16 MiB of the memory the server may use, at least 16; 0: no bound)")
	fs.IntVar(&cfg.MaxNodeSeries, "max-node-series", maxNodeSeries,
		"a /metrics scrape gathers at most `n` per-node and per-source series, those of whole deployments in scenario name order; the rest are counted in scenario_server_node_series_left_out (env "+envMaxNodeSeries+
			"; 0: no bound)")
	fs.IntVar(&cfg.MaxDeadLetters, "max-dead-letters", maxDeadLetters,
		"a scenario's deployments keep at most `n` dead letters, and 16 MiB of them, an hour (all scenarios together 64 MiB); past it their per-event errors are only counted, and one dead letter says so (env "+envMaxDeadLetters+
			"; 0: no bound)")
	fs.StringVar(&cfg.SinkDir, "sink-dir", getenv(envSinkDir), "deployed file sinks write inside `dir` (env "+envSinkDir+"; default: the data directory's sinks/)")
	fs.StringVar(&cfg.SourceDir, "source-dir", getenv(envSourceDir), "deployed file sources read inside `dir` (env "+envSourceDir+"; default: the data directory's sources/)")
	fs.StringVar(&cfg.KafkaBrokers, "kafka-brokers", getenv(envKafkaBrokers), "Kafka sources read from and Kafka sinks write to these seed brokers, comma-separated `host:port,...` (env "+envKafkaBrokers+"); none: scenarios with a Kafka source or sink do not deploy")
	fs.DurationVar(&cfg.ResultRetention, "result-retention", resultRetention,
		"deployments' collected sink results older than this are deleted (env "+envResultRetention+"; 0: kept for ever)")
	fs.Int64Var(&cfg.MaxResultBytes, "max-result-bytes", maxResultBytes,
		"a scenario keeps at most this many `bytes` of collected results and dead letters (their JSON): past it, the oldest are deleted after a checkpoint, down to seven eighths of it (env "+envMaxResultBytes+"; 0: no bound)")
	fs.Int64Var(&cfg.MaxTotalResultBytes, "max-total-result-bytes", maxTotalResults,
		"all scenarios together, stopped and archived ones too, keep at most this many `bytes` of collected results and dead letters, looked at every minute: past it, those holding more than their fair share of seven eighths of it lose their oldest, down to that share (env "+envMaxTotalResults+"; 0: no bound)")
	fs.Int64Var(&cfg.MinFreeDisk, "min-free-disk", minFreeDisk,
		"with a SQLite store, event batches are refused (503 store-full) while its disk has less than this many `bytes` free, before it fills and every deployment fails (env "+envMinFreeDisk+"; 0: no bound)")
	fs.DurationVar(&cfg.BatchKeyRetention, "batch-key-retention", batchKeyRetention,
		"ingested batches' idempotency keys are forgotten after this (env "+envBatchKeyRetention+"; 0: remembered for ever)")
	fs.DurationVar(&cfg.AuditRetention, "audit-retention", auditRetention,
		"audit log entries older than this are deleted, but the newest (env "+envAuditRetention+"; 0: kept for ever)")
	fs.IntVar(&cfg.TestMaxRecords, "test-max-records", int(testMaxRecords),
		fmt.Sprintf("a test run takes at most `n` records, non-blank lines (env %s; 0: %d)", envTestMaxRecords, api.DefaultTestMaxRecords))
	fs.Int64Var(&cfg.TestMaxBytes, "test-max-bytes", testMaxBytes,
		fmt.Sprintf("largest request body of a test run, in `bytes` (env %s; 0: %d)", envTestMaxBytes, api.DefaultTestMaxBytes))
	fs.DurationVar(&cfg.TestTimeout, "test-timeout", testTimeout,
		fmt.Sprintf("stop a test run that takes longer than this `duration` (env %s; 0: %v)", envTestTimeout, api.DefaultTestTimeout))
	fs.DurationVar(&cfg.AnswerWriteTimeout, "answer-write-timeout", answerWriteTimeout,
		fmt.Sprintf("a client that has not taken an answer (an export, a page of results; not a stream) this `duration` after its first byte is cut off (env %s; 0: %v)", envAnswerWriteTimeout, api.DefaultAnswerWriteTimeout))
	fs.BoolVar(&cfg.NoResume, "no-resume", noResume,
		"safe mode: resume no deployment; they stay RUNNING with a \"paused\" reason until deployed again or a start without it (env "+envNoResume+")")
	fs.BoolVar(&cfg.TakeOver, "take-over", takeOver,
		"run here, from their last checkpoints, the deployments of a server sharing this PostgreSQL store that is gone (its lease expired, 15 s), but those reading or writing files, which are its own (env "+envTakeOver+"; --take-over=false: only at a start)")
	fs.IntVar(&cfg.CrashLoopLimit, "crash-loop-limit", int(crashLoopLimit),
		"mark FAILED, instead of resuming, a deployment during whose runs the server died `n` times in a row (env "+envCrashLoopLimit+"; 0: always resume)")
	fs.Usage = func() {
		if !helpAsked(args) {
			fmt.Fprintln(fs.Output(), "(scenario-server serve -h lists the flags)")
			return
		}
		fmt.Fprintf(fs.Output(), "Usage: scenario-server [serve] [flags]\n\n"+
			"Serves the REST API (/api), its docs (/api/docs), /healthz, /readyz and /metrics, and runs the deployed scenarios.\n"+
			"The store is PostgreSQL when %s is set (a postgres:// URL), else SQLite in the data directory.\n"+
			"Other commands: scenario-server run (replay a file of events through a scenario file), token (API tokens), backup (copy the store and its files), version, help.\n\nFlags:\n", envDatabaseURL)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return serveConfig{}, err
		}
		return serveConfig{}, flagError(fs, err)
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
		return serveConfig{}, fmt.Errorf("%w: --max-body-bytes must be positive", errUsage)
	}
	if cfg.MaxConnections < 0 {
		return serveConfig{}, fmt.Errorf("%w: --max-connections must not be negative", errUsage)
	}
	if cfg.CheckpointInterval < 0 || cfg.EventTimeout < 0 || cfg.MaxBacklog < 0 || cfg.MaxDeploymentState < 0 || cfg.MaxTotalState < 0 || cfg.LargeEventBytes < 0 || cfg.EventMemory < 0 || cfg.MaxDeployments < 0 || cfg.MaxNodeSeries < 0 || cfg.MaxDeadLetters < 0 {
		return serveConfig{}, fmt.Errorf("%w: --checkpoint-interval, --event-timeout, --max-backlog, --max-deployment-state, --max-total-state, --large-event-bytes, --event-memory, --max-deployments, --max-node-series and --max-dead-letters must not be negative", errUsage)
	}
	if cfg.MaxResultBytes < 0 || cfg.MaxTotalResultBytes < 0 || cfg.MinFreeDisk < 0 {
		return serveConfig{}, fmt.Errorf("%w: --max-result-bytes, --max-total-result-bytes and --min-free-disk must not be negative", errUsage)
	}
	if cfg.ResultRetention < 0 || cfg.BatchKeyRetention < 0 || cfg.AuditRetention < 0 {
		return serveConfig{}, fmt.Errorf("%w: --result-retention, --batch-key-retention and --audit-retention must not be negative", errUsage)
	}
	if cfg.CrashLoopLimit < 0 {
		return serveConfig{}, fmt.Errorf("%w: --crash-loop-limit must not be negative", errUsage)
	}
	if cfg.TestMaxRecords < 0 || cfg.TestMaxBytes < 0 || cfg.TestTimeout < 0 || cfg.AnswerWriteTimeout < 0 {
		return serveConfig{}, fmt.Errorf("%w: --test-max-records, --test-max-bytes, --test-timeout and --answer-write-timeout must not be negative", errUsage)
	}
	if err := cfg.Auth.validate(); err != nil {
		return serveConfig{}, err
	}
	if err := cfg.Guard.validate(); err != nil {
		return serveConfig{}, err
	}
	cfg.DatabaseURL = getenv(envDatabaseURL)
	return cfg, nil
}

// envInt reads a non-negative integer from the environment variable name; unset is 0.
// envDuration reads a non-negative duration from the environment variable name, or def.
func envDuration(getenv func(string) string, name string, def time.Duration) (time.Duration, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%w: %s=%q is not a duration such as 24h (0: for ever)", errUsage, name, v)
	}
	return d, nil
}

func envInt(getenv func(string) string, name string) (int64, error) {
	v := getenv(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: %s=%q is not a non-negative whole number", errUsage, name, v)
	}
	return n, nil
}

func newLogger(cfg serveConfig, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		// A duration as the text log writes it ("1.5s"), not slog's JSON nanoseconds
		// (1500000000), which read as a count.
		opts.ReplaceAttr = func(_ []string, a slog.Attr) slog.Attr {
			if a.Value.Kind() == slog.KindDuration {
				a.Value = slog.StringValue(a.Value.Duration().String())
			}
			return a
		}
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

// serve runs the server until ctx is cancelled. It starts in this order, so that a server
// that cannot run stops before it touches anything: it takes the lock of the data directory
// (a second server on it exits with the holder's pid), opens the port, opens the store, and
// only then resumes the deployments and serves HTTP. On ctx's end it shuts down gracefully:
// it stops accepting, waits up to the shutdown timeout for requests in flight, has every
// deployment commit a final checkpoint (within another shutdown timeout), and closes the
// store.
func serve(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	cfg, err := parseServeFlags(args, getenv, stderr)
	if err != nil {
		return err
	}
	log := newLogger(cfg, stderr)
	if limit := debug.SetMemoryLimit(-1); limit < math.MaxInt64 {
		log.Info("the Go runtime's soft memory limit", "bytes", limit, "source", memoryLimitSource(getenv))
	}
	if memory, ok := serverMemory(os.ReadFile); ok {
		if bound, beyond := stateBeyondMemory(cfg.MaxTotalState, cfg.MaxDeploymentState, cfg.MaxDeployments, memory); beyond {
			budget := "none"
			if bound > 0 {
				budget = strconv.FormatInt(bound, 10)
			}
			log.Warn("the deployments may hold more window state than the memory the server may use can checkpoint: a checkpoint copies the state (a peak of 7 times it was seen), so the process may run out of memory before a budget fails a deployment; --max-total-state's default is an eighth of the memory",
				"stateBudget", budget, "memory", memory, "eighth", memory/8,
				"maxTotalState", cfg.MaxTotalState, "maxDeploymentState", cfg.MaxDeploymentState, "maxDeployments", cfg.MaxDeployments)
		}
	}

	if err := deploy.CheckKafkaSettings(splitList(cfg.KafkaBrokers), cfg.Kafka); err != nil {
		return err
	}
	if err := cfg.Auth.checkAddress(cfg.Addr); err != nil {
		return err
	}
	if err := cfg.Auth.checkReached(cfg.Guard, log); err != nil {
		return err
	}
	// The data directory holds the SQLite store, the file sinks and sources, and the
	// server's identity: one server per directory, whatever the store.
	lock, err := sqlite.LockDataDir(cfg.DataDir)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	if cfg.DatabaseURL == "" {
		if why := lostStore(cfg.DataDir); why != "" {
			log.Warn("starting with an empty store: "+why+"; if that is not meant, stop the server and put the store's file back from a backup",
				"dataDir", cfg.DataDir)
		}
	}
	owner, err := serverIdentity(cfg.DataDir)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		// (A new user's second `go run` beside a first, still running, said only "bind:
		// address already in use".)
		return fmt.Errorf("listening on %s: %w: another program listens there (another scenario-server? stop it, or start this one with --addr %s, or env %s)", cfg.Addr, err, nextPort(cfg.Addr), envAddr)
	}
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.Addr, err)
	}
	defer ln.Close()
	var limit *connLimit
	if cfg.MaxConnections > 0 {
		// Past it, connections wait in the kernel's backlog (every file descriptor taken by
		// clients would leave the store, the file sinks and Kafka failing to open theirs),
		// and idle keep-alive connections are closed to make room.
		limit = newConnLimit(ln, cfg.MaxConnections)
		ln = limit
	}
	if err := cfg.Auth.checkPosture(ln, cfg.Addr, log); err != nil {
		return err
	}
	tlsConfig, err := cfg.Auth.tlsConfig()
	if err != nil {
		return err
	}

	st, storeAttrs, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	seeded, err := seedExamples(ctx, st, log)
	if err != nil {
		return err
	}
	if cfg.Auth.Tokens {
		warnWithoutTokens(ctx, st, cfg, log)
	}

	metrics := prometheus.NewRegistry()
	metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	sinkDir := cfg.SinkDir
	if sinkDir == "" {
		sinkDir = filepath.Join(cfg.DataDir, "sinks")
	}
	sourceDir := cfg.SourceDir
	if sourceDir == "" {
		sourceDir = filepath.Join(cfg.DataDir, "sources")
	}
	// Ready for the files that deployed file sources follow.
	if err := os.MkdirAll(sourceDir, 0o750); err != nil {
		return fmt.Errorf("creating the source directory: %w", err)
	}
	copyExampleData(seeded, sourceDir, log)
	stateBudget := cfg.MaxDeploymentState
	if stateBudget == 0 {
		stateBudget = -1 // no budget
	}
	rt, err := deploy.New(deploy.Config{
		Store: st, Logger: log, CheckpointInterval: cfg.CheckpointInterval, EventTimeout: eventTimeout(cfg.EventTimeout), MaxBacklog: cfg.MaxBacklog, MaxBacklogBytes: cfg.MaxBacklogBytes,
		FileSinkDir: sinkDir, FileSourceDir: sourceDir, KafkaBrokers: splitList(cfg.KafkaBrokers), Kafka: cfg.Kafka, Metrics: metrics,
		ResultRetention: cfg.ResultRetention, MaxResultBytes: cfg.MaxResultBytes, MaxTotalResultBytes: cfg.MaxTotalResultBytes, MinFreeDisk: cfg.MinFreeDisk, DiskFree: diskFree(cfg), BatchKeyRetention: cfg.BatchKeyRetention, AuditRetention: cfg.AuditRetention,
		Owner: owner, NoResume: cfg.NoResume, TakeOver: cfg.TakeOver, CrashLoopLimit: crashLoopLimit(cfg.CrashLoopLimit),
		MaxDeploymentState: stateBudget, MaxTotalState: cfg.MaxTotalState, MaxTotalPendingResultBytes: cfg.MaxTotalState, LargeEventBytes: cfg.LargeEventBytes,
		EventMemoryBytes:      cfg.EventMemory,
		MaxDeployments:        cfg.MaxDeployments,
		MaxNodeSeries:         cfg.MaxNodeSeries,
		MaxDeadLettersPerHour: crashLoopLimit(cfg.MaxDeadLetters), MaxDeadLetterBytesPerHour: deadLetterBytes(cfg.MaxDeadLetters),
	})
	if err != nil {
		return err
	}
	// On every way out: the deployments commit a final checkpoint before the store closes.
	stopRuntime := sync.OnceValue(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
		defer cancel()
		return rt.Shutdown(ctx)
	})
	defer stopRuntime()

	trusted, err := cfg.Guard.trustedProxies()
	if err != nil {
		return err
	}
	authn, signIn, err := cfg.Auth.authenticator(ctx, st, cfg.DataDir, log)
	if err != nil {
		return err
	}
	handler, err := api.New(api.Config{
		Runtime:            rt,
		Nodes:              rt.Nodes(), // Kafka sources typed from the schema registry, as deployed
		Metrics:            metrics,
		Store:              st,
		Logger:             log,
		MaxBodyBytes:       cfg.MaxBodyBytes,
		Version:            buildVersion(),
		TestMaxRecords:     cfg.TestMaxRecords,
		TestMaxBytes:       cfg.TestMaxBytes,
		TestTimeout:        cfg.TestTimeout,
		AnswerWriteTimeout: cfg.AnswerWriteTimeout,
		Authenticator:      authn,
		SignIn:             signIn,
		Browser:            cfg.Guard.browser(),
		TrustedProxies:     trusted,
		RateLimits:         cfg.Guard.rateLimits(),
		DeployApproval:     cfg.Auth.DeployApproval,
	})
	if err != nil {
		return err
	}
	// The port is open and the store ready: resume the deployments, then serve (their
	// events are accepted from the first request on).
	if err := rt.Start(ctx); err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           handler,
		MaxHeaderBytes:    maxHeaderBytes,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ConnContext:       api.ConnContext,
	}
	if limit != nil {
		srv.ConnState = limit.connState
	}
	srv.RegisterOnShutdown(handler.CloseStreams)
	served := make(chan error, 1)
	scheme := "http"
	if tlsConfig != nil {
		srv.TLSConfig, scheme = tlsConfig, "https"
		go func() { served <- srv.ServeTLS(ln, "", "") }()
	} else {
		go func() { served <- srv.Serve(ln) }()
	}
	log.Info("listening", append([]any{
		"addr", ln.Addr().String(),
		"url", scheme + "://" + ln.Addr().String() + "/", "authentication", cfg.Auth.configured(),
		"startup", time.Since(processStart).Round(time.Microsecond).String(),
		"server", owner, "noResume", cfg.NoResume, "takeOver", cfg.TakeOver, "maxTotalState", cfg.MaxTotalState,
		"largestRequestBody", largestBody(cfg.MaxBodyBytes, cfg.Guard.requestBytes), "version", versionLine(),
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
		// Answers still being written (to clients that take them slowly, or not at all) after
		// the timeout: their connections are closed, and the deployments still stop with a
		// checkpoint.
		log.Warn("closing the connections still being answered after the shutdown timeout", "timeout", cfg.ShutdownTimeout.String(), "error", err)
		srv.Close()
	}
	// No request adds events any more: checkpoint and stop the deployments.
	if err := stopRuntime(); err != nil {
		return fmt.Errorf("shutting down the deployments: %w", err)
	}
	if err := st.Close(); err != nil {
		return fmt.Errorf("closing the store: %w", err)
	}
	log.Info("stopped")
	return nil
}

// crashLoopLimit is deploy.Config.CrashLoopLimit for the flag's value (0: never), and
// deploy.Config.MaxDeadLettersPerHour for --max-dead-letters (0: no bound): deploy reads 0
// as its default and a negative value as none.
func crashLoopLimit(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// deadLetterBytes is deploy.Config.MaxDeadLetterBytesPerHour for --max-dead-letters n: its
// default with a bound, none without.
func deadLetterBytes(n int) int64 {
	if n == 0 {
		return -1
	}
	return deploy.DefaultMaxDeadLetterBytesPerHour
}

// lostStore says why the SQLite store of a data directory that has held a server (its
// serverIDFile is there) looks lost: its file is missing or empty (SQLite takes an empty
// file for a new database: every scenario and deployment gone, without a word); "" when it
// does not.
func lostStore(dataDir string) string {
	if _, err := os.Stat(filepath.Join(dataDir, serverIDFile)); err != nil {
		return "" // a new data directory
	}
	fi, err := os.Stat(filepath.Join(dataDir, sqlite.FileName))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("%s is missing from a data directory a server has used (%s is there)", sqlite.FileName, serverIDFile)
	case err == nil && fi.Size() == 0:
		return fmt.Sprintf("%s is empty in a data directory a server has used (%s is there)", sqlite.FileName, serverIDFile)
	}
	return ""
}

// defaultMinFreeDisk is the default of --min-free-disk: 256 MiB.
const defaultMinFreeDisk = 256 << 20

// diskFree is how deploy asks how much a SQLite store's disk has free; nil for PostgreSQL,
// whose disk the server does not see.
func diskFree(cfg serveConfig) func() (int64, error) {
	if cfg.DatabaseURL != "" {
		return nil
	}
	return func() (int64, error) { return sqlite.DiskFree(cfg.DataDir) }
}

// serverIDFile holds the server's identity in the data directory.
const serverIDFile = "server-id"

// serverIdentity returns this server's identity among the servers sharing a store (the
// owner of its deployments' leases): the host name and a random id kept in the data
// directory, created at the first start. The data directory's lock makes it one process's
// at a time, and a restarted server is the same server: it takes its deployments back at once.
func serverIdentity(dataDir string) (string, error) {
	path := filepath.Join(dataDir, serverIDFile)
	b, err := os.ReadFile(path)
	id := strings.TrimSpace(string(b))
	if errors.Is(err, os.ErrNotExist) || (err == nil && id == "") {
		var raw [8]byte
		if _, err := rand.Read(raw[:]); err != nil {
			return "", fmt.Errorf("creating the server id: %w", err)
		}
		host, _ := os.Hostname()
		id = host + "/" + hex.EncodeToString(raw[:])
		if err := os.WriteFile(path, []byte(id+"\n"), 0o640); err != nil {
			return "", fmt.Errorf("saving the server id: %w", err)
		}
		return id, nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the server id: %w", err)
	}
	return id, nil
}

// The author and comment of the example scenarios seedExamples imports.
const (
	exampleAuthor  = auth.ExamplesSubject
	exampleComment = "example"
)

// seedExamples imports the example scenarios (package examples), each named after its file
// with its saved test case of sample records (examples.SampleName), when the store has no
// scenario at all, archived ones included: a fresh server has examples ready to open, test
// and deploy, and a store that was ever used is left as it is. It returns the examples it
// imported. A scenario that another server created meanwhile (same database) is not an
// error, and gets no test case from this one.
func seedExamples(ctx context.Context, st store.Store, log *slog.Logger) ([]examples.Example, error) {
	existing, err := st.ListScenarios(ctx, store.ScenarioFilter{Archived: store.AnyArchived})
	if err != nil {
		return nil, fmt.Errorf("listing scenarios: %w", err)
	}
	if len(existing) > 0 {
		return nil, nil
	}
	list, err := examples.All()
	if err != nil {
		return nil, err
	}
	var names []string
	var seeded []examples.Example
	for _, ex := range list {
		_, err := st.CreateScenario(ctx, ex.Name, store.Draft{Graph: ex.Graph, Comment: exampleComment, Author: exampleAuthor})
		switch {
		case errors.Is(err, store.ErrAlreadyExists):
			continue
		case err != nil:
			return nil, fmt.Errorf("importing example %q: %w", ex.Name, err)
		}
		if _, err := st.PutTestCase(ctx, store.TestCase{Scenario: ex.Name, Name: examples.SampleName,
			Records: ex.Sample.Records, Expected: string(ex.Sample.Expected), Author: exampleAuthor}); err != nil {
			return nil, fmt.Errorf("saving example %q's test case: %w", ex.Name, err)
		}
		names = append(names, ex.Name)
		seeded = append(seeded, ex)
	}
	log.Info("imported the example scenarios into the empty store, each with a test case of sample records", "scenarios", names, "testCase", examples.SampleName)
	return seeded, nil
}

// copyExampleData copies the data files the seeded examples' file sources read
// (testdata/flights-20k.ndjson, ...) from the working directory, when it has them (the
// repository's root, where `go run ./cmd/scenario-server` starts), to the same paths under
// sourceDir, unless a file is there already, so that the examples deploy as they are. A file
// it cannot copy is logged, with what to do, and the server starts all the same.
func copyExampleData(seeded []examples.Example, sourceDir string, log *slog.Logger) {
	done := map[string]bool{}
	for _, ex := range seeded {
		if done[ex.DataFile] {
			continue
		}
		done[ex.DataFile] = true
		dst := filepath.Join(sourceDir, filepath.FromSlash(ex.DataFile))
		if _, err := os.Stat(dst); err == nil {
			continue
		}
		if err := copyFile(filepath.FromSlash(ex.DataFile), dst); err != nil {
			log.Warn("an example's data file could not be copied into the source directory: a deployed example waits for it there; to deploy the example's data, make the folder and copy the file from the repository (mkdir -p folder; cp file to)",
				"file", ex.DataFile, "folder", filepath.Dir(dst), "to", dst, "reason", err.Error())
			continue
		}
		log.Info("copied an example's data file into the source directory", "file", ex.DataFile, "to", dst)
	}
}

// maxExampleData is the largest example data file copyExampleData copies: the examples' are
// 1.8 and 2.9 MB.
const maxExampleData = 64 << 20

// copyFile copies src, a regular file of at most maxExampleData bytes, to dst (created with
// its directories; written to a temporary file renamed into place, so that a deployment
// never reads half of it).
func copyFile(src, dst string) error {
	// Checked before it is opened: opening a named pipe waits for a writer.
	if fi, err := os.Stat(src); err != nil {
		return err
	} else if !fi.Mode().IsRegular() || fi.Size() > maxExampleData {
		return fmt.Errorf("%s is not a regular file of at most %d bytes", src, maxExampleData)
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o750); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".copy-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // once renamed, there is nothing to remove
	if _, err := io.Copy(tmp, io.LimitReader(in, maxExampleData)); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

// buildVersion is the main module's version when built from a tagged module, else "dev".
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// splitList splits a comma-separated list, dropping blanks around and between its items.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// The environment variables of the browser checks and the trusted proxies.
const (
	envPublicURL      = "SCENARIO_SERVER_PUBLIC_URL"
	envAllowedHosts   = "SCENARIO_SERVER_ALLOWED_HOSTS"
	envTrustedProxies = "SCENARIO_SERVER_TRUSTED_PROXIES"
)

// guardConfig is the browser checks (api.BrowserConfig), the proxies trusted to name the
// client, and the rate limits (api.RateLimits), as the flags give them.
type guardConfig struct {
	publicURL      string
	allowedHosts   string
	proxies        string
	ingestRate     float64
	ingestBurst    int
	testRate       float64
	testBurst      int
	maxTests       int
	maxValidations int
	maxStreams     int
	perClient      int
	ingestBytes    int64
	requestBytes   int64
	minBodyRate    int64
	bodiesPer      int
	// writeRate, writeBurst, writeBytesRate and writeBytesBurst: api.RateLimits' Write*.
	writeRate       float64
	writeBurst      int
	writeBytesRate  float64
	writeBytesBurst int
}

// maxHeaderBytes bounds a request's line and headers (http.Server.MaxHeaderBytes; net/http
// reads 4 KiB more): past it, 431. net/http's default, 1 MiB, let a header line sent and held
// unfinished keep about 2 MB a connection for the header timeout, no credentials needed: 300
// such connections took the server from 41 to 584 MB (round 26). 64 KiB is twice Kestrel's
// MaxRequestHeadersTotalSize (32 KiB): cookies and OIDC bearer tokens of a few KB fit.
const maxHeaderBytes = 64 << 10

// largestBody is the largest body of a request other than an event batch the server takes:
// --max-body-bytes, or half of the budget of such bodies read at once (--request-body-bytes,
// 0: none) when that is less (a request holds at most half of it).
func largestBody(maxBody, budget int64) int64 {
	if budget > 0 {
		return min(maxBody, budget/2)
	}
	return maxBody
}

// defaultGuard is guardConfig without flags: api.DefaultRateLimits, the event batches read
// at once at most a sixteenth of the server's memory (serverMemory), the other request
// bodies at most a 320th (they take up to about 40 times their size while handled, so an
// eighth).
func defaultGuard() guardConfig {
	d := api.DefaultRateLimits()
	ingestBytes, requestBytes := d.IngestBodyBytes, d.RequestBodyBytes
	if m, ok := serverMemory(os.ReadFile); ok {
		// At least 2 MiB: one request holds at most half of a budget, and bodies of 1 MiB
		// pass even on a server of little memory.
		ingestBytes = max(min(ingestBytes, m/16), 2<<20)
		requestBytes = max(min(requestBytes, m/320), 2<<20)
	}
	return guardConfig{ingestRate: d.IngestRate, ingestBurst: d.IngestBurst, testRate: d.TestRate,
		testBurst: d.TestBurst, maxTests: d.MaxConcurrentTests, maxValidations: d.MaxConcurrentValidations, maxStreams: d.MaxStreams,
		perClient: d.MaxStreamsPerClient, ingestBytes: ingestBytes, requestBytes: requestBytes,
		minBodyRate: d.MinBodyRate, bodiesPer: d.MaxBodiesPerClient, writeRate: d.WriteRate, writeBurst: d.WriteBurst,
		writeBytesRate: d.WriteBytesRate, writeBytesBurst: d.WriteBytesBurst}
}

func (g *guardConfig) register(fs *flag.FlagSet, getenv func(string) string) {
	d := defaultGuard()
	fs.StringVar(&g.publicURL, "public-url", getenv(envPublicURL),
		"the `URL` users reach the server at (https://scenarios.example.com): its host is accepted as Host and its origin as Origin (env "+envPublicURL+"); without it only loopback names and the listening address are")
	fs.StringVar(&g.allowedHosts, "allowed-hosts", getenv(envAllowedHosts),
		"more accepted Host headers, comma-separated `name[:port],...` (env "+envAllowedHosts+")")
	fs.StringVar(&g.proxies, "trusted-proxies", getenv(envTrustedProxies),
		"reverse proxies whose X-Forwarded-For names the client, comma-separated `cidr-or-ip,...` (env "+envTrustedProxies+"); none: X-Forwarded-For is ignored")
	fs.Float64Var(&g.ingestRate, "ingest-rate", d.ingestRate,
		"`n` event batches a second that an identity (or, without authentication, a client address) may send; more are answered 429 rate-limited (0: no limit)")
	fs.IntVar(&g.ingestBurst, "ingest-burst", d.ingestBurst, "an identity may send `n` event batches at once before -ingest-rate applies")
	fs.Float64Var(&g.testRate, "test-rate", d.testRate,
		"`n` test runs a second that an identity (or client address) may start; more are answered 429 rate-limited (0: no limit)")
	fs.IntVar(&g.testBurst, "test-burst", d.testBurst, "an identity may start `n` test runs at once before -test-rate applies")
	fs.IntVar(&g.maxTests, "max-concurrent-tests", d.maxTests,
		"the server runs at most `n` test runs at once, half of them (at least 1) for one identity or client address; more are answered 503 test-runs-busy; deploys run their saved test cases beside them, as many at once, one for an identity (0: no bound)")
	fs.IntVar(&g.maxValidations, "max-concurrent-validations", d.maxValidations,
		"the server validates at most `n` graphs at once (validations, saves, imports, test runs, node tests, suggestions), half of them (at least 1) for one identity or client address; more wait up to 10 s, then are answered 503 requests-busy (0: no bound)")
	fs.IntVar(&g.maxStreams, "max-streams", d.maxStreams,
		"the server serves at most `n` server-sent event streams (counts and results) at once; more are answered 503 streams-busy (0: no bound)")
	fs.IntVar(&g.perClient, "max-streams-per-client", d.perClient,
		"an identity (or, without authentication, a client address) holds at most `n` streams at once; more are answered 429 too-many-streams (0: no bound)")
	fs.Int64Var(&g.ingestBytes, "ingest-body-bytes", d.ingestBytes,
		"the server holds at most this many `bytes` of event batches read and being stored at once, each batch's counted as it arrives, one identity (or client address) a quarter of them but for a batch it sends alone, which may take half; a batch read past it is answered 503 ingest-busy, a batch larger than half of it 413 body-too-large (default: 256 MiB or a sixteenth of the memory, the least, at least 2 MiB; 0: no bound)")
	fs.Int64Var(&g.requestBytes, "request-body-bytes", d.requestBytes,
		"the same for the bodies of every other request (scenarios, graphs to test or validate, test cases) and the stored versions requests load, GETs included: at most this many `bytes` read or loaded and being handled at once, each body's counted as it arrives, each version's once loaded, one identity (or client address) a quarter of them but for a request it sends alone, which may take half; a request past it is answered 503 requests-busy, a body larger than half of it 413 body-too-large (the log's listening line gives the largest body taken, largestRequestBody), a stored version loaded counted up to half of it; a body takes up to about 40 times its size while it is handled (default: 64 MiB or a 320th of the memory, the least, at least 2 MiB; 0: no bound)")
	fs.Int64Var(&g.minBodyRate, "min-body-rate", d.minBodyRate,
		fmt.Sprintf("a request body must arrive at `bytes` a second on average, once %v have passed since its headers; slower, it is answered 408 request-timeout and its connection closed (0: no bound; the body read timeout, a minute, holds)", api.DefaultBodyRateGrace))
	fs.IntVar(&g.bodiesPer, "max-bodies-per-client", d.bodiesPer,
		"an identity (or, without authentication, a client address) sends at most `n` request bodies at once, each from its headers until it has arrived; more are answered 429 too-many-bodies (0: no bound)")
	fs.Float64Var(&g.writeRate, "write-rate", d.writeRate,
		"`n` stored writes a second (saves, imports, archives, deploys, cancels, deploy requests and their answers, test cases, tokens) that an identity (or client address) may make; more are answered 429 rate-limited (0: no limit)")
	fs.IntVar(&g.writeBurst, "write-burst", d.writeBurst, "an identity may make `n` stored writes at once before -write-rate applies")
	fs.Float64Var(&g.writeBytesRate, "write-bytes-rate", d.writeBytesRate,
		"`bytes` a second of stored writes' bodies that an identity (or client address) may send; more are answered 429 rate-limited (0: no limit)")
	fs.IntVar(&g.writeBytesBurst, "write-bytes-burst", d.writeBytesBurst,
		"an identity may send `bytes` of stored writes' bodies at once before -write-bytes-rate applies (a larger body with its Content-Length takes them all when the bucket is full; a chunked body takes its bytes as they arrive, refused when they are not there)")
}

func (g *guardConfig) validate() error {
	if g.publicURL != "" {
		u, err := url.Parse(g.publicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%w: --public-url %q: want http(s)://host[:port]", errUsage, g.publicURL)
		}
	}
	if _, err := g.trustedProxies(); err != nil {
		return err
	}
	if g.ingestRate < 0 || g.ingestBurst < 0 || g.testRate < 0 || g.testBurst < 0 || g.maxTests < 0 || g.maxValidations < 0 ||
		g.maxStreams < 0 || g.perClient < 0 || g.ingestBytes < 0 || g.requestBytes < 0 || g.minBodyRate < 0 || g.bodiesPer < 0 ||
		g.writeRate < 0 || g.writeBurst < 0 || g.writeBytesRate < 0 || g.writeBytesBurst < 0 {
		return fmt.Errorf("%w: --ingest-rate, --ingest-burst, --test-rate, --test-burst, --max-concurrent-tests, --max-concurrent-validations, --max-streams, --max-streams-per-client, --ingest-body-bytes, --request-body-bytes, --min-body-rate, --max-bodies-per-client, --write-rate, --write-burst, --write-bytes-rate and --write-bytes-burst must not be negative", errUsage)
	}
	// A budget so small that a body of half of it is smaller than the designer's requests
	// refuses nearly every one: 413 for a scenario of a few hundred bytes (a review: a tiny
	// --request-body-bytes refused every body, and the server started as if well).
	for _, b := range []struct {
		flag string
		n    int64
	}{{"--ingest-body-bytes", g.ingestBytes}, {"--request-body-bytes", g.requestBytes}} {
		if b.n > 0 && b.n < minBodyBudget {
			return fmt.Errorf("%w: %s %d: a body larger than half of it (%d bytes) would be refused; give at least %d (64 KiB), or 0 for no bound", errUsage, b.flag, b.n, b.n/2, minBodyBudget)
		}
	}
	return nil
}

// minBodyBudget is the least --ingest-body-bytes and --request-body-bytes but 0 (no bound).
const minBodyBudget = 64 << 10

// trustedProxies parses -trusted-proxies: CIDR ranges, or addresses (a range of one).
func (g *guardConfig) trustedProxies() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, p := range splitList(g.proxies) {
		prefix, err := netip.ParsePrefix(p)
		if err != nil {
			addr, aerr := netip.ParseAddr(p)
			if aerr != nil {
				return nil, fmt.Errorf("%w: --trusted-proxies: %q is neither an address nor a CIDR range", errUsage, p)
			}
			addr = addr.Unmap()
			prefix = netip.PrefixFrom(addr, addr.BitLen())
		}
		out = append(out, prefix.Masked())
	}
	return out, nil
}

func (g *guardConfig) browser() api.BrowserConfig {
	return api.BrowserConfig{PublicURL: g.publicURL, AllowedHosts: splitList(g.allowedHosts)}
}

func (g *guardConfig) rateLimits() api.RateLimits {
	return api.RateLimits{IngestRate: g.ingestRate, IngestBurst: g.ingestBurst, TestRate: g.testRate,
		TestBurst: g.testBurst, MaxConcurrentTests: g.maxTests, MaxConcurrentValidations: g.maxValidations, MaxStreams: g.maxStreams,
		MaxStreamsPerClient: g.perClient, IngestBodyBytes: g.ingestBytes, RequestBodyBytes: g.requestBytes,
		MinBodyRate: g.minBodyRate, BodyRateGrace: api.DefaultBodyRateGrace, MaxBodiesPerClient: g.bodiesPer,
		ContendedMinRate: api.DefaultContendedMinRate, ContendedRateWindow: api.DefaultContendedRateWindow,
		ContendedWait: api.DefaultContendedWait,
		WriteRate:     g.writeRate, WriteBurst: g.writeBurst, WriteBytesRate: g.writeBytesRate, WriteBytesBurst: g.writeBytesBurst}
}

// warnWithoutTokens logs, for a server with API tokens, when its store holds no token that can
// be used (none, or all revoked or expired), and how to create one: every request but the
// public routes would be refused.
func warnWithoutTokens(ctx context.Context, st store.Store, cfg serveConfig, log *slog.Logger) {
	list, err := st.ListTokens(ctx)
	if err != nil {
		return
	}
	now := time.Now()
	for _, t := range list {
		if t.RevokedAt.IsZero() && (t.ExpiresAt.IsZero() || t.ExpiresAt.After(now)) {
			return
		}
	}
	where := "--data-dir " + cfg.DataDir
	if cfg.DatabaseURL != "" {
		where = "with " + envDatabaseURL + " set as the server's"
	}
	log.Warn(msgNoTokens, "tokens", len(list), "create", "scenario-server token create "+where+" --name NAME --role admin")
}

// msgNoTokens is the warning of a server with API tokens and no usable token.
const msgNoTokens = "API tokens are on but the store holds no usable token: every route but the public ones answers 401 until one is created with scenario-server token create"

// eventTimeout is deploy.Config.EventTimeout for --event-timeout d: 0 (no limit) is negative
// there.
func eventTimeout(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// nextPort is addr (host:port) with the port after its own, for the advice when addr is in use
// (it said 8081 whatever the port: a new-user round); 127.0.0.1:8081 when addr does not parse.
func nextPort(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	p, perr := strconv.Atoi(port)
	if err != nil || perr != nil || p < 1 || p >= 65535 {
		return "127.0.0.1:8081"
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, strconv.Itoa(p+1))
}
