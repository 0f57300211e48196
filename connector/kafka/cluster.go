package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/scenario-server/scenario-server/schemaregistry"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// DefaultClientID is the client id the server gives the brokers when Cluster.ClientID is
// empty.
const DefaultClientID = "scenario-server"

// DefaultTransactionTimeout is Cluster.TransactionTimeout's default: the most brokers allow
// unless their transaction.max.timeout.ms is raised (15 minutes by default), where Kafka's
// producers default to 1 minute and Flink's Kafka sink asks for an hour, for the time a
// restart may take.
const DefaultTransactionTimeout = 15 * time.Minute

// The SASL mechanisms of Cluster.SASLMechanism.
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
)

// Cluster is how the server connects to the Kafka brokers, beyond their addresses: the
// client id, TLS and SASL. The zero value is plaintext without authentication, as client id
// DefaultClientID.
type Cluster struct {
	// ClientID names the server to the brokers (their request logs, quotas); empty:
	// DefaultClientID.
	ClientID string
	// TLS connects to the brokers over TLS, checking their certificates against CAFile (or
	// the system's roots when it is empty). CAFile, CertFile and KeyFile imply it.
	TLS bool
	// CAFile is a PEM file of the CA certificates that sign the brokers' certificates.
	CAFile string
	// CertFile and KeyFile are PEM files of a client certificate and its private key, for
	// brokers that authenticate clients by TLS (mutual TLS); both or neither.
	CertFile, KeyFile string
	// SASLMechanism authenticates with SASL: SASLPlain, SASLScramSHA256 or SASLScramSHA512
	// (any case); empty: no SASL. It needs SASLUser and SASLPassword.
	SASLMechanism string
	SASLUser      string
	// SASLPassword is a secret: LogValue and the errors never show it.
	SASLPassword string
	// TransactionTimeout is how long the brokers keep a Kafka sink's transaction open before
	// they abort it (Kafka's transaction.timeout.ms); 0: DefaultTransactionTimeout. A server
	// that dies between the store's commit of a checkpoint and Kafka's must be back within it,
	// or the checkpoint's records are lost; read_committed consumers wait behind the open
	// transaction of a server that died before its store commit for as long, unless it comes
	// back sooner (its sinks' producers abort it when they start). Brokers refuse more than
	// their transaction.max.timeout.ms (15 minutes unless set). At least a second.
	TransactionTimeout time.Duration
	// FetchMemory is the most bytes the Kafka sources of all deployments hold at once of the
	// records they fetched (FetchMemory); 0 or negative: no such bound.
	FetchMemory int64
	// SchemaRegistry, when its URL is set, is the schema registry of the topics' values:
	// Kafka sources decode its wire format and type #input from it, Kafka sinks may encode
	// against it (see package schemaregistry).
	SchemaRegistry schemaregistry.Config
}

// LogValue shows the settings without the password.
func (k Cluster) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("client_id", k.clientID()), slog.Bool("tls", k.tlsOn())}
	if k.SASLMechanism != "" {
		attrs = append(attrs, slog.String("sasl", strings.ToUpper(k.SASLMechanism)), slog.String("sasl_user", k.SASLUser))
	}
	if k.SchemaRegistry.URL != "" {
		attrs = append(attrs, slog.Any("schema_registry", k.SchemaRegistry))
	}
	return slog.GroupValue(attrs...)
}

func (k Cluster) clientID() string {
	if k.ClientID == "" {
		return DefaultClientID
	}
	return k.ClientID
}

func (k Cluster) tlsOn() bool {
	return k.TLS || k.CAFile != "" || k.CertFile != "" || k.KeyFile != ""
}

// Conn is what every Kafka client of a runtime is built from: the seed brokers and the
// options of a Cluster (files read once, by NewConn). Its methods are safe for concurrent
// use.
type Conn struct {
	brokers  []string
	clientID string
	opts     []kgo.Opt
	// txnTimeout is Cluster.TransactionTimeout, or its default.
	txnTimeout time.Duration
	// sasl describes the SASL login, for the error a refused login gives ("" without SASL).
	sasl string
	// topics is Topics' listing, shared by its callers.
	topics topicListing
	// tls is the TLS configuration (nil: plaintext), also in opts: a source's client dials
	// with it itself (fetchLedger.dialer).
	tls   *tls.Config
	tlsAt int // the index of kgo.DialTLSConfig in opts (-1: none)
	// fetchMem is the sources' budget of fetched records (Cluster.FetchMemory; nil: none).
	fetchMem *FetchMemory
}

// FetchMemory is the sources' budget of fetched records (nil: none).
func (c *Conn) FetchMemory() *FetchMemory {
	if c == nil {
		return nil
	}
	return c.fetchMem
}

// topicListing is the brokers' topic list as Topics shares it: one listing at a time, its
// callers waiting on done, and its answer kept for TopicsFresh. Before, each call made a new
// client (connections, ApiVersions, the whole metadata): 200 viewers calling at once took the
// server to 1.18 GB with a topic of 20,000 partitions, and 1,045 connections a second to the
// brokers (hostile round).
type topicListing struct {
	mu    sync.Mutex
	names []string
	at    time.Time     // when names were listed (zero: never, or not since a failure)
	done  chan struct{} // the listing in progress closes it (nil: none)
	err   error         // the last listing's error, for those who waited on it
	now   func() time.Time
}

// TopicsFresh is how long a topic list answers Topics again before the brokers are asked
// anew; topicsListTimeout bounds one listing, whoever waits for it.
const (
	TopicsFresh       = 5 * time.Second
	topicsListTimeout = 10 * time.Second
)

// NewConn checks the brokers ("host:port"; none is allowed: Kafka sources and sinks then do
// not deploy) and the cluster settings, and reads the TLS files. Its errors name the setting
// at fault and never hold the password. log, when set, warns of a password sent in clear.
func NewConn(brokers []string, k Cluster, log *slog.Logger) (*Conn, error) {
	if err := checkBrokers(brokers); err != nil {
		return nil, err
	}
	c := &Conn{brokers: brokers, clientID: k.clientID(), opts: []kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ClientID(k.clientID())},
		txnTimeout: k.TransactionTimeout, fetchMem: NewFetchMemory(k.FetchMemory), tlsAt: -1}
	switch {
	case c.txnTimeout == 0:
		c.txnTimeout = DefaultTransactionTimeout
	case c.txnTimeout < time.Second || c.txnTimeout > math.MaxInt32*time.Millisecond:
		return nil, fmt.Errorf("the Kafka transaction timeout %v: give one between 1s and 596h (brokers allow up to their transaction.max.timeout.ms, 15m unless set)", c.txnTimeout)
	}
	if k.tlsOn() {
		cfg, err := k.tlsConfig()
		if err != nil {
			return nil, err
		}
		c.tls, c.tlsAt = cfg, len(c.opts)
		c.opts = append(c.opts, kgo.DialTLSConfig(cfg))
	}
	if k.SASLMechanism == "" {
		if k.SASLUser != "" || k.SASLPassword != "" {
			return nil, errors.New("Kafka SASL: a user or password is set but no mechanism (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)")
		}
		return c, nil
	}
	if mech := strings.ToUpper(k.SASLMechanism); mech != SASLPlain && mech != SASLScramSHA256 && mech != SASLScramSHA512 {
		return nil, fmt.Errorf("Kafka SASL mechanism %q: use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", k.SASLMechanism)
	}
	if k.SASLUser == "" || k.SASLPassword == "" {
		return nil, fmt.Errorf("Kafka SASL %s needs both a user and a password", k.SASLMechanism)
	}
	var m sasl.Mechanism
	switch mech := strings.ToUpper(k.SASLMechanism); mech {
	case SASLPlain:
		m = plain.Auth{User: k.SASLUser, Pass: k.SASLPassword}.AsMechanism()
		if !k.tlsOn() && log != nil {
			log.Warn("Kafka SASL PLAIN without TLS sends the password in clear text to the brokers")
		}
	case SASLScramSHA256:
		m = scram.Auth{User: k.SASLUser, Pass: k.SASLPassword}.AsSha256Mechanism()
	case SASLScramSHA512:
		m = scram.Auth{User: k.SASLUser, Pass: k.SASLPassword}.AsSha512Mechanism()
	default:
		return nil, fmt.Errorf("Kafka SASL mechanism %q: use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", k.SASLMechanism)
	}
	c.opts = append(c.opts, kgo.SASL(m))
	c.sasl = fmt.Sprintf("SASL %s as user %q", m.Name(), k.SASLUser)
	return c, nil
}

// tlsConfig reads the CA and the client certificate.
func (k Cluster) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if k.CAFile != "" {
		pem, err := os.ReadFile(k.CAFile)
		if err != nil {
			return nil, fmt.Errorf("Kafka TLS CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("Kafka TLS CA file %q holds no PEM certificate", k.CAFile)
		}
		cfg.RootCAs = pool
	}
	if (k.CertFile == "") != (k.KeyFile == "") {
		return nil, errors.New("Kafka TLS: the client certificate and its key go together")
	}
	if k.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(k.CertFile, k.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("Kafka TLS client certificate %q and key %q: %w", k.CertFile, k.KeyFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// Configured reports whether the server has brokers.
func (c *Conn) Configured() bool { return len(c.brokers) > 0 }

// checkBrokers returns an error for a broker address that is not host:port.
func checkBrokers(brokers []string) error {
	for _, b := range brokers {
		host, port, err := net.SplitHostPort(b)
		if err == nil {
			var n int
			n, err = strconv.Atoi(port)
			if err == nil && (n <= 0 || n > 65535 || host == "") {
				err = errors.New("no host, or a port out of range")
			}
		}
		if err != nil {
			return fmt.Errorf("Kafka broker %q is not host:port: %w", b, err)
		}
	}
	return nil
}

// ErrNotConfigured is Topics' error when there are no brokers.
var ErrNotConfigured = errors.New("the server has no Kafka brokers (--kafka-brokers)")

// Topics lists the topics of the brokers, sorted by name. Internal topics (the brokers' own,
// and any whose name starts with "__") are left out. It waits for the brokers until ctx
// ends: the caller gives it a deadline. Errors: ErrNotConfigured without brokers; otherwise
// the brokers' or ctx's error, with a refused login or an untrusted certificate explained.
//
// A list made less than TopicsFresh ago is answered again, and callers while a listing is in
// progress share it: the brokers see one listing at a time, and at most one every TopicsFresh
// while the lists succeed, however many call. The listing goes on when a caller's ctx ends
// (topicsListTimeout bounds it), for the others and the next.
func (c *Conn) Topics(ctx context.Context) ([]string, error) {
	if !c.Configured() {
		return nil, ErrNotConfigured
	}
	if err := ctx.Err(); err != nil {
		return nil, err // no listing for a caller gone
	}
	l := &c.topics
	l.mu.Lock()
	now := time.Now
	if l.now != nil {
		now = l.now
	}
	if !l.at.IsZero() && now().Sub(l.at) < TopicsFresh {
		names := slices.Clone(l.names)
		l.mu.Unlock()
		return names, nil
	}
	if l.done == nil {
		l.done = make(chan struct{})
		go func(done chan struct{}) {
			lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), topicsListTimeout)
			defer cancel()
			names, err := c.listTopics(lctx)
			l.mu.Lock()
			l.names, l.err, l.done = names, err, nil
			l.at = time.Time{}
			if err == nil {
				l.at = now()
			}
			l.mu.Unlock()
			close(done)
		}(l.done)
	}
	done := l.done
	l.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return nil, l.err
	}
	return slices.Clone(l.names), nil
}

// listTopics asks the brokers for Topics' list, through a client of its own.
func (c *Conn) listTopics(ctx context.Context) ([]string, error) {
	cl, err := c.Client()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	details, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the Kafka topics: %w", c.explain(err))
	}
	names := make([]string, 0, len(details))
	for name, d := range details {
		if !d.IsInternal && !strings.HasPrefix(name, "__") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// Options are the client options of the connection: the seed brokers, client id, TLS and
// SASL (a copy).
func (c *Conn) Options() []kgo.Opt { return append([]kgo.Opt(nil), c.opts...) }

// Client is a new client of the cluster with the options extra added; the caller closes it.
func (c *Conn) Client(extra ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append(append([]kgo.Opt(nil), c.opts...), extra...)...)
}

// sourceClient is Client for a source whose fetched records l counts in the FetchMemory: its
// connections take each fetch response's part before reading it (fetchConn; TLS dialed by
// l's dialer rather than kgo.DialTLSConfig), refusing responses past maxRead bytes
// (kgo.BrokerMaxReadBytes), and l's hook counts the records buffered.
func (c *Conn) sourceClient(l *fetchLedger, maxRead int32, extra ...kgo.Opt) (*kgo.Client, error) {
	opts := make([]kgo.Opt, 0, len(c.opts)+len(extra)+2)
	for i, o := range c.opts {
		if i != c.tlsAt {
			opts = append(opts, o)
		}
	}
	opts = append(opts, kgo.Dialer(l.dialer(c.tls, maxRead)), kgo.BrokerMaxReadBytes(maxRead), kgo.WithHooks(l))
	return kgo.NewClient(append(opts, extra...)...)
}

// explain adds to err what a refused login or certificate means, for the live status.
func (c *Conn) explain(err error) error {
	if err == nil {
		return nil
	}
	var unknown x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var hostname x509.HostnameError
	switch {
	case errors.Is(err, kerr.SaslAuthenticationFailed), errors.Is(err, kerr.IllegalSaslState), errors.Is(err, kerr.UnsupportedSaslMechanism):
		return fmt.Errorf("the brokers refused the login (%s): check the Kafka SASL settings: %w", c.sasl, err)
	case errors.As(err, &unknown), errors.As(err, &invalid), errors.As(err, &hostname):
		return fmt.Errorf("the brokers' TLS certificate is not trusted: check the Kafka TLS CA: %w", err)
	case errors.Is(err, kerr.InvalidTransactionTimeout):
		return fmt.Errorf("the brokers refuse the transaction timeout of %v, more than their transaction.max.timeout.ms: lower --kafka-transaction-timeout or raise theirs: %w", c.txnTimeout, err)
	case c.sasl != "" && errors.Is(err, io.EOF):
		// Some brokers answer a refused login by closing the connection.
		return fmt.Errorf("the brokers closed the connection, as they do when they refuse the login (%s): check the Kafka SASL settings: %w", c.sasl, err)
	}
	return err
}
