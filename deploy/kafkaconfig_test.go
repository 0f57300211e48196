package deploy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/scenario-server/scenario-server/connector/kafka"
)

// testCA is a certificate authority made for a test, with the PEM file of its certificate.
type testCA struct {
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	caFile string
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &testCA{cert: cert, key: key, caFile: filepath.Join(t.TempDir(), "ca.pem")}
	writePEM(t, ca.caFile, "CERTIFICATE", der)
	return ca
}

// issue signs a certificate for 127.0.0.1 (server and client use) and returns it with the
// PEM files of the certificate and its key.
func (ca *testCA) issue(t *testing.T, name string) (tls.Certificate, string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "EC PRIVATE KEY", keyDER)
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return pair, certFile, keyFile
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// secureCluster is a kfake cluster that speaks TLS only, with a certificate of ca, requires
// a client certificate of ca, and SASL: user "alice", password "wonderland", SCRAM-SHA-512.
func secureCluster(t *testing.T, ca *testCA, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	serverCert, _, _ := ca.issue(t, "broker")
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	return newCluster(t, append([]kfake.Opt{
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{serverCert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}),
		kfake.EnableSASL(), kfake.Superuser(SASLScramSHA512, "alice", "wonderland"),
	}, opts...)...)
}

// A Kafka source reads over TLS (server and client certificates) and SASL SCRAM-SHA-512,
// exactly as over plaintext; the same server with a wrong password, or without the CA, shows
// why it cannot read in the source's live status, and reads nothing.
func TestKafkaSourceOverTLSAndSCRAM(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	brokers := secureCluster(t, ca, kfake.SeedTopics(1, "events")).ListenAddrs()
	_, certFile, keyFile := ca.issue(t, "scenario-server")
	good := KafkaCluster{CAFile: ca.caFile, CertFile: certFile, KeyFile: keyFile, ClientID: "decisions",
		SASLMechanism: "scram-sha-512", SASLUser: "alice", SASLPassword: "wonderland"}

	conn, err := kafka.NewConn(brokers, good, nil)
	if err != nil {
		t.Fatal(err)
	}
	prod, err := conn.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	recs := records(500)
	produce(t, prod, "events", 0, recs, nil)

	st := sqliteStore(t)
	graph := kafkaGraph(t, "events", "2s")
	createScenario(t, st, "k", graph)
	r := newRuntime(t, st, func(c *Config) { c.KafkaBrokers = brokers; c.Kafka = good })
	deploy(t, r, "k", 0)
	l := waitCommitted(t, r, "k", 500)
	equalResults(t, collected(t, st, "k"), replay(t, tumblingGraph(""), recs))
	if l.Sources[0].Error != "" {
		t.Errorf("source error %q, want none", l.Sources[0].Error)
	}

	for _, tc := range []struct {
		name, want string
		change     func(*KafkaCluster)
	}{
		{"wrong password", "they refuse the login (SASL SCRAM-SHA-512 as user \"alice\")", func(k *KafkaCluster) { k.SASLPassword = "looking-glass" }},
		{"unknown user", "they refuse the login (SASL SCRAM-SHA-512 as user \"bob\")", func(k *KafkaCluster) { k.SASLUser = "bob" }},
		{"no CA", "the brokers' TLS certificate is not trusted", func(k *KafkaCluster) { k.CAFile = "" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := sqliteStore(t)
			createScenario(t, st, "k", graph)
			bad := good
			tc.change(&bad)
			r := newRuntime(t, st, func(c *Config) { c.KafkaBrokers = brokers; c.Kafka = bad })
			deploy(t, r, "k", 0)
			var l Live
			waitFor(t, "an error in the source's live status", func() bool {
				l, _ = r.Live("k")
				return len(l.Sources) > 0 && l.Sources[0].Error != ""
			})
			if msg := l.Sources[0].Error; !strings.Contains(msg, tc.want) || strings.Contains(msg, "wonderland") || strings.Contains(msg, "looking-glass") {
				t.Errorf("source error %q, want one with %q and no password", msg, tc.want)
			}
			if l.Nodes["in"].In != 0 {
				t.Errorf("%d records read, want none", l.Nodes["in"].In)
			}
		})
	}
}

// Bad cluster settings are errors when the runtime is built, naming what is wrong and never
// showing the password.
func TestKafkaClusterSettingsAreChecked(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	_, certFile, keyFile := ca.issue(t, "client")
	notPEM := filepath.Join(t.TempDir(), "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	const pw = "p4ssw0rd-secret"
	for _, tc := range []struct {
		name string
		k    KafkaCluster
		want string
	}{
		{"CA file missing", KafkaCluster{CAFile: "/nonexistent/ca.pem"}, "Kafka TLS CA file"},
		{"CA file not PEM", KafkaCluster{CAFile: notPEM}, "holds no PEM certificate"},
		{"certificate without key", KafkaCluster{CertFile: certFile}, "the client certificate and its key go together"},
		{"key without certificate", KafkaCluster{KeyFile: keyFile}, "the client certificate and its key go together"},
		{"key of another certificate", KafkaCluster{CertFile: certFile, KeyFile: ca.caFile}, "Kafka TLS client certificate"},
		{"unknown mechanism", KafkaCluster{SASLMechanism: "GSSAPI", SASLUser: "u", SASLPassword: pw}, `Kafka SASL mechanism "GSSAPI"`},
		{"mechanism without user", KafkaCluster{SASLMechanism: "PLAIN", SASLPassword: pw}, "needs both a user and a password"},
		{"mechanism without password", KafkaCluster{SASLMechanism: "SCRAM-SHA-256", SASLUser: "u"}, "needs both a user and a password"},
		{"password without mechanism", KafkaCluster{SASLUser: "u", SASLPassword: pw}, "no mechanism"},
	} {
		_, err := New(Config{Store: sqliteStore(t), KafkaBrokers: []string{"127.0.0.1:9092"}, Kafka: tc.k})
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), pw) {
			t.Errorf("%s: error %v, want one with %q and no password", tc.name, err, tc.want)
		}
	}
	for _, k := range []KafkaCluster{
		{},
		{TLS: true},
		{CAFile: ca.caFile, CertFile: certFile, KeyFile: keyFile},
		{SASLMechanism: "plain", SASLUser: "u", SASLPassword: pw},
		{SASLMechanism: "SCRAM-SHA-256", SASLUser: "u", SASLPassword: pw},
	} {
		if _, err := kafka.NewConn([]string{"127.0.0.1:9092"}, k, nil); err != nil {
			t.Errorf("%+v: %v", k.LogValue(), err)
		}
	}
	if v := (KafkaCluster{SASLMechanism: "PLAIN", SASLUser: "u", SASLPassword: pw}).LogValue().String(); strings.Contains(v, pw) {
		t.Errorf("the logged settings %s show the password", v)
	}
}

// A Kafka sink writes over TLS and SASL SCRAM-SHA-512 exactly as over plaintext; with a
// wrong password its checkpoints fail, and the live status says why.
func TestKafkaSinkOverTLSAndSCRAM(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	brokers := secureCluster(t, ca, kfake.SeedTopics(1, "decisions")).ListenAddrs()
	_, certFile, keyFile := ca.issue(t, "scenario-server")
	good := KafkaCluster{CAFile: ca.caFile, CertFile: certFile, KeyFile: keyFile,
		SASLMechanism: SASLScramSHA512, SASLUser: "alice", SASLPassword: "wonderland"}
	conn, err := kafka.NewConn(brokers, good, nil)
	if err != nil {
		t.Fatal(err)
	}
	graph := tumblingGraph(kafkaSinkRef("decisions"))
	recs := records(500)

	st := sqliteStore(t)
	createScenario(t, st, "k", graph)
	r := newRuntime(t, st, func(c *Config) { c.KafkaBrokers = brokers; c.Kafka = good })
	deploy(t, r, "k", 0)
	ingestAll(t, r, "k", recs, 0, 100)
	waitCommitted(t, r, "k", 500)
	if err := r.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	equalResults(t, committedOutput(t, brokers, "decisions", conn.Options()...), kafkaOracle(t, recs))

	st = sqliteStore(t)
	createScenario(t, st, "k", graph)
	bad := good
	bad.SASLPassword = "looking-glass"
	r = newRuntime(t, st, func(c *Config) { c.KafkaBrokers = brokers; c.Kafka = bad })
	deploy(t, r, "k", 0)
	ingestAll(t, r, "k", recs, 0, 100)
	// The sink cannot read its topic's max.message.bytes: the deployment waits, saying why.
	// (Under load the first reason said can be a request's timeout, the SCRAM exchange being
	// slow: the refused login is said once a request gets its answer.)
	var l Live
	waitFor(t, "the deployment waiting for the sink's brokers, which refuse the login", func() bool {
		l, _ = r.Live("k")
		return strings.Contains(l.Waiting, `they refuse the login (SASL SCRAM-SHA-512 as user "alice")`)
	})
	if want := `kafka sink "out" (topic "decisions")`; !strings.Contains(l.Waiting, want) ||
		strings.Contains(l.Waiting, "looking-glass") {
		t.Errorf("waiting %q, want it naming the sink and the refused login, without the password", l.Waiting)
	}
	if l.Sources[0].Committed != 0 {
		t.Errorf("%d events committed, want none while the sink cannot write", l.Sources[0].Committed)
	}
	r.abort() // its final checkpoint could not write either
}
