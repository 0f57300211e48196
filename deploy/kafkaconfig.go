package deploy

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/scenario-server/scenario-server/schemaregistry"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// DefaultKafkaClientID is the client id the server gives the brokers when
// KafkaCluster.ClientID is empty.
const DefaultKafkaClientID = "scenario-server"

// The SASL mechanisms of KafkaCluster.SASLMechanism.
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
)

// KafkaCluster is how the server connects to the Kafka brokers of Config.KafkaBrokers, beyond
// their addresses: the client id, TLS and SASL. The zero value is plaintext without
// authentication, as client id DefaultKafkaClientID.
type KafkaCluster struct {
	// ClientID names the server to the brokers (their request logs, quotas); empty:
	// DefaultKafkaClientID.
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
	// SchemaRegistry, when its URL is set, is the schema registry of the topics' values:
	// Kafka sources decode its wire format and type #input from it, Kafka sinks may encode
	// against it (see package schemaregistry).
	SchemaRegistry schemaregistry.Config
}

// LogValue shows the settings without the password.
func (k KafkaCluster) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("client_id", k.clientID()), slog.Bool("tls", k.tlsOn())}
	if k.SASLMechanism != "" {
		attrs = append(attrs, slog.String("sasl", strings.ToUpper(k.SASLMechanism)), slog.String("sasl_user", k.SASLUser))
	}
	if k.SchemaRegistry.URL != "" {
		attrs = append(attrs, slog.Any("schema_registry", k.SchemaRegistry))
	}
	return slog.GroupValue(attrs...)
}

func (k KafkaCluster) clientID() string {
	if k.ClientID == "" {
		return DefaultKafkaClientID
	}
	return k.ClientID
}

func (k KafkaCluster) tlsOn() bool {
	return k.TLS || k.CAFile != "" || k.CertFile != "" || k.KeyFile != ""
}

// kafkaConn is what every Kafka client of the runtime is built from: the seed brokers and the
// options of KafkaCluster (files read once, when the runtime is built).
type kafkaConn struct {
	brokers []string
	opts    []kgo.Opt
	// sasl describes the SASL login, for the error a refused login gives ("" without SASL).
	sasl string
}

// newKafkaConn checks the brokers and the cluster settings and reads the TLS files. Its
// errors name the setting at fault and never hold the password.
func newKafkaConn(brokers []string, k KafkaCluster, log *slog.Logger) (kafkaConn, error) {
	if err := checkBrokers(brokers); err != nil {
		return kafkaConn{}, err
	}
	c := kafkaConn{brokers: brokers, opts: []kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ClientID(k.clientID())}}
	if k.tlsOn() {
		cfg, err := k.tlsConfig()
		if err != nil {
			return kafkaConn{}, err
		}
		c.opts = append(c.opts, kgo.DialTLSConfig(cfg))
	}
	if k.SASLMechanism == "" {
		if k.SASLUser != "" || k.SASLPassword != "" {
			return kafkaConn{}, errors.New("Kafka SASL: a user or password is set but no mechanism (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)")
		}
		return c, nil
	}
	if k.SASLUser == "" || k.SASLPassword == "" {
		return kafkaConn{}, fmt.Errorf("Kafka SASL %s needs both a user and a password", k.SASLMechanism)
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
		return kafkaConn{}, fmt.Errorf("Kafka SASL mechanism %q: use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", k.SASLMechanism)
	}
	c.opts = append(c.opts, kgo.SASL(m))
	c.sasl = fmt.Sprintf("SASL %s as user %q", m.Name(), k.SASLUser)
	return c, nil
}

// tlsConfig reads the CA and the client certificate.
func (k KafkaCluster) tlsConfig() (*tls.Config, error) {
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

// client is a new client of the cluster with the options extra added.
func (c kafkaConn) client(extra ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append(append([]kgo.Opt(nil), c.opts...), extra...)...)
}

// explain adds to err what a refused login or certificate means, for the live status.
func (c kafkaConn) explain(err error) error {
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
	case c.sasl != "" && errors.Is(err, io.EOF):
		// Some brokers answer a refused login by closing the connection.
		return fmt.Errorf("the brokers closed the connection, as they do when they refuse the login (%s): check the Kafka SASL settings: %w", c.sasl, err)
	}
	return err
}
