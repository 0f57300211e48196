package main

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/deploy"
	"github.com/scenario-server/scenario-server/schemaregistry"
)

// The Kafka cluster settings come from the environment and the flags (the flags win), the
// SASL password from the environment only.
func TestKafkaFlags(t *testing.T) {
	vars := map[string]string{envKafkaClientID: "decisions", envKafkaTLS: "true", envKafkaTLSCA: "/etc/kafka/ca.pem",
		envKafkaTLSCert: "/etc/kafka/client.pem", envKafkaTLSKey: "/etc/kafka/client-key.pem",
		envKafkaSASLMechanism: "SCRAM-SHA-512", envKafkaSASLUser: "alice", envKafkaSASLPassword: "wonderland",
		envKafkaTxnTimeout: "5m", envKafkaFetchMemory: "123456"}
	cfg, err := parseServeFlags(nil, env(nil), io.Discard)
	if err != nil || cfg.Kafka.TransactionTimeout != 15*time.Minute {
		t.Errorf("the transaction timeout by default: %v (%v), want 15m", cfg.Kafka.TransactionTimeout, err)
	}
	cfg, err = parseServeFlags(nil, env(vars), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := deploy.KafkaCluster{ClientID: "decisions", TLS: true, CAFile: "/etc/kafka/ca.pem", CertFile: "/etc/kafka/client.pem",
		KeyFile: "/etc/kafka/client-key.pem", SASLMechanism: "SCRAM-SHA-512", SASLUser: "alice", SASLPassword: "wonderland",
		TransactionTimeout: 5 * time.Minute, FetchMemory: 123456}
	if cfg.Kafka != want {
		t.Errorf("from the environment: %+v, want %+v", cfg.Kafka, want)
	}
	cfg, err = parseServeFlags([]string{"--kafka-client-id", "c2", "--kafka-tls=false", "--kafka-tls-ca", "ca2.pem",
		"--kafka-sasl-mechanism", "PLAIN", "--kafka-sasl-user", "bob", "--kafka-transaction-timeout", "1h", "--kafka-fetch-memory", "0"}, env(vars), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want.ClientID, want.TLS, want.CAFile, want.SASLMechanism, want.SASLUser = "c2", false, "ca2.pem", "PLAIN", "bob"
	want.TransactionTimeout, want.FetchMemory = time.Hour, 0
	if cfg.Kafka != want {
		t.Errorf("flags over the environment: %+v, want %+v", cfg.Kafka, want)
	}
	if _, err := parseServeFlags([]string{"--kafka-sasl-password", "x"}, env(nil), io.Discard); !errors.Is(err, errUsage) {
		t.Errorf("a password flag: %v, want a usage error (the password is environment only)", err)
	}
	if _, err := parseServeFlags(nil, env(map[string]string{envKafkaTLS: "yes please"}), io.Discard); !errors.Is(err, errUsage) {
		t.Errorf("%s=\"yes please\": %v, want a usage error", envKafkaTLS, err)
	}
	if cfg, _ := parseServeFlags(nil, env(nil), io.Discard); cfg.Kafka.FetchMemory != defaultKafkaFetchMemory() || cfg.Kafka.FetchMemory <= 0 {
		t.Errorf("the Kafka fetch memory by default: %d, want a sixteenth of the server's memory, %d", cfg.Kafka.FetchMemory, defaultKafkaFetchMemory())
	}
	if _, err := parseServeFlags(nil, env(map[string]string{envKafkaFetchMemory: "lots"}), io.Discard); !errors.Is(err, errUsage) {
		t.Errorf("%s=\"lots\": %v, want a usage error", envKafkaFetchMemory, err)
	}
	if _, err := parseServeFlags(nil, env(map[string]string{envKafkaTxnTimeout: "soon"}), io.Discard); !errors.Is(err, errUsage) {
		t.Errorf("%s=\"soon\": %v, want a usage error", envKafkaTxnTimeout, err)
	}
}

// Bad Kafka settings stop the server at start with a message naming them, the password in
// no message and no log line.
func TestServeStopsOnBadKafkaSettings(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		vars map[string]string
		want string
	}{
		{"CA file missing", []string{"--kafka-tls-ca", "/nonexistent/ca.pem"}, nil, "Kafka TLS CA file"},
		{"unknown mechanism", []string{"--kafka-sasl-mechanism", "KERBEROS", "--kafka-sasl-user", "alice"},
			map[string]string{envKafkaSASLPassword: "wonderland"}, `Kafka SASL mechanism "KERBEROS"`},
		{"unknown mechanism without user", []string{"--kafka-sasl-mechanism", "FOO"}, nil, `Kafka SASL mechanism "FOO"`},
		{"no password", []string{"--kafka-sasl-mechanism", "SCRAM-SHA-256", "--kafka-sasl-user", "alice"}, nil, "needs both a user and a password"},
		{"transaction timeout under a second", []string{"--kafka-transaction-timeout", "500ms"}, nil, "the Kafka transaction timeout 500ms: give one between 1s and"},
		{"registry URL scheme", []string{"--kafka-schema-registry", "ftp://registry:8081"}, nil, `schema registry URL "ftp://registry:8081"`},
		{"registry URL unparsable", nil, map[string]string{envKafkaSchemaRegistry: "http://registry:port"}, `schema registry URL "http://registry:port"`},
		{"registry credentials in the URL", []string{"--kafka-schema-registry", "http://alice:wonderland@registry:8081"}, nil, "not in the URL"},
		{"registry user without password", []string{"--kafka-schema-registry", "http://registry:8081", "--kafka-schema-registry-user", "alice"}, nil,
			"schema registry: basic auth needs both a user and a password"},
	} {
		dataDir := filepath.Join(t.TempDir(), "data")
		vars := map[string]string{envDataDir: dataDir, envKafkaBrokers: "127.0.0.1:9092"}
		for k, v := range tc.vars {
			vars[k] = v
		}
		logs := &syncBuffer{}
		err := serve(t.Context(), append([]string{"--addr", "127.0.0.1:0"}, tc.args...), env(vars), logs)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error()+logs.String(), "wonderland") {
			t.Errorf("%s: serve returned %v, want an error with %q and no password", tc.name, err, tc.want)
		}
		if strings.HasPrefix(err.Error(), "deploy:") {
			t.Errorf("%s: %q reads as about a deploy", tc.name, err)
		}
		if _, err := os.Stat(dataDir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: the data directory was made before the settings were checked (%v)", tc.name, err)
		}
	}
}

// The schema registry's URL and user come from the environment or the flags, its password
// from the environment only.
func TestKafkaSchemaRegistryFlags(t *testing.T) {
	vars := map[string]string{envKafkaSchemaRegistry: "http://registry:8081", envKafkaSchemaRegistryUser: "alice",
		envKafkaSchemaRegistryPassword: "wonderland"}
	cfg, err := parseServeFlags([]string{"--kafka-schema-registry", "https://sr.example:443"}, env(vars), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := schemaregistry.Config{URL: "https://sr.example:443", User: "alice", Password: "wonderland"}
	if cfg.Kafka.SchemaRegistry != want {
		t.Errorf("registry settings %+v, want %+v", cfg.Kafka.SchemaRegistry, want)
	}
	if _, err := parseServeFlags([]string{"--kafka-schema-registry-password", "x"}, env(nil), io.Discard); !errors.Is(err, errUsage) {
		t.Errorf("a registry password flag: %v, want a usage error (the password is environment only)", err)
	}
}
