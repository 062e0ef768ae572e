"""kafkapy-console: a web console for any Kafka-compatible cluster (its own process, reading the
cluster through the Kafka protocol, the brokers' Prometheus endpoints and optionally ZooKeeper)."""
