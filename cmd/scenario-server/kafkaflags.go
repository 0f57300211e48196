package main

import (
	"flag"

	"github.com/scenario-server/scenario-server/deploy"
)

// The environment variables of serve's Kafka cluster flags (the brokers: envKafkaBrokers).
const (
	envKafkaClientID      = "SCENARIO_SERVER_KAFKA_CLIENT_ID"
	envKafkaTLS           = "SCENARIO_SERVER_KAFKA_TLS"
	envKafkaTLSCA         = "SCENARIO_SERVER_KAFKA_TLS_CA"
	envKafkaTLSCert       = "SCENARIO_SERVER_KAFKA_TLS_CERT"
	envKafkaTLSKey        = "SCENARIO_SERVER_KAFKA_TLS_KEY"
	envKafkaSASLMechanism = "SCENARIO_SERVER_KAFKA_SASL_MECHANISM"
	envKafkaSASLUser      = "SCENARIO_SERVER_KAFKA_SASL_USER"
	envKafkaSASLPassword  = "SCENARIO_SERVER_KAFKA_SASL_PASSWORD" // environment only: never a flag, never logged
	envKafkaTxnTimeout    = "SCENARIO_SERVER_KAFKA_TRANSACTION_TIMEOUT"
	envKafkaFetchMemory   = "SCENARIO_SERVER_KAFKA_FETCH_MEMORY"

	envKafkaSchemaRegistry         = "SCENARIO_SERVER_KAFKA_SCHEMA_REGISTRY"
	envKafkaSchemaRegistryUser     = "SCENARIO_SERVER_KAFKA_SCHEMA_REGISTRY_USER"
	envKafkaSchemaRegistryPassword = "SCENARIO_SERVER_KAFKA_SCHEMA_REGISTRY_PASSWORD" // environment only, never logged
)

// registerKafkaFlags adds the flags of k (deploy.KafkaCluster) to fs, each defaulting to its
// environment variable; the SASL password comes from the environment only. The settings are
// checked, and the files read, when the runtime is built (deploy.New): a bad one stops the
// server at start.
func registerKafkaFlags(fs *flag.FlagSet, getenv func(string) string, k *deploy.KafkaCluster) error {
	tlsOn, err := envBool(getenv, envKafkaTLS)
	if err != nil {
		return err
	}
	txnTimeout, err := envDuration(getenv, envKafkaTxnTimeout, deploy.DefaultKafkaTransactionTimeout)
	if err != nil {
		return err
	}
	fetchMemory := defaultKafkaFetchMemory()
	if getenv(envKafkaFetchMemory) != "" {
		if fetchMemory, err = envInt(getenv, envKafkaFetchMemory); err != nil {
			return err
		}
	}
	fs.Int64Var(&k.FetchMemory, "kafka-fetch-memory", fetchMemory,
		"the Kafka sources of all deployments hold at most this many `bytes` at once of the records they fetched, a response counted at up to 25 times its size until its records are read out, at most a quarter of this; a source whose next response would pass it waits (env "+envKafkaFetchMemory+
			"; default: a sixteenth of the memory the server may use, 256 MiB when it is not known; 0: no bound)")
	fs.StringVar(&k.ClientID, "kafka-client-id", getenv(envKafkaClientID), "the client `id` the server gives the Kafka brokers (env "+envKafkaClientID+"; default "+deploy.DefaultKafkaClientID+")")
	fs.BoolVar(&k.TLS, "kafka-tls", tlsOn, "connect to the Kafka brokers over TLS, trusting the system's CAs unless -kafka-tls-ca is set (env "+envKafkaTLS+"; implied by the other -kafka-tls flags)")
	fs.StringVar(&k.CAFile, "kafka-tls-ca", getenv(envKafkaTLSCA), "trust the Kafka brokers' certificates signed by the CAs in this PEM `file` (env "+envKafkaTLSCA+")")
	fs.StringVar(&k.CertFile, "kafka-tls-cert", getenv(envKafkaTLSCert), "present this client certificate, a PEM `file`, to the Kafka brokers (env "+envKafkaTLSCert+"; needs -kafka-tls-key)")
	fs.StringVar(&k.KeyFile, "kafka-tls-key", getenv(envKafkaTLSKey), "the private key of -kafka-tls-cert, a PEM `file` (env "+envKafkaTLSKey+")")
	fs.StringVar(&k.SASLMechanism, "kafka-sasl-mechanism", getenv(envKafkaSASLMechanism), "log in to the Kafka brokers with SASL `mechanism` PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (env "+envKafkaSASLMechanism+"; needs -kafka-sasl-user and env "+envKafkaSASLPassword+")")
	fs.StringVar(&k.SASLUser, "kafka-sasl-user", getenv(envKafkaSASLUser), "the SASL `user` of -kafka-sasl-mechanism (env "+envKafkaSASLUser+"; the password: env "+envKafkaSASLPassword+" only)")
	k.SASLPassword = getenv(envKafkaSASLPassword)
	fs.DurationVar(&k.TransactionTimeout, "kafka-transaction-timeout", txnTimeout, "the brokers abort a Kafka sink's transaction left open this `long` (Kafka's transaction.timeout.ms; env "+envKafkaTxnTimeout+"): a server that dies between the store's commit of a checkpoint and Kafka's must be back within it, or that checkpoint's records are lost; at most the brokers' transaction.max.timeout.ms")
	sr := &k.SchemaRegistry
	fs.StringVar(&sr.URL, "kafka-schema-registry", getenv(envKafkaSchemaRegistry), "a Confluent-compatible schema registry's `URL` (http:// or https://): Kafka sources decode its wire format (Avro, JSON Schema) and type #input from the topic's subject, Kafka sinks can encode values against a subject (env "+envKafkaSchemaRegistry+")")
	fs.StringVar(&sr.User, "kafka-schema-registry-user", getenv(envKafkaSchemaRegistryUser), "the basic-auth `user` of -kafka-schema-registry (env "+envKafkaSchemaRegistryUser+"; the password: env "+envKafkaSchemaRegistryPassword+" only)")
	sr.Password = getenv(envKafkaSchemaRegistryPassword)
	return nil
}
