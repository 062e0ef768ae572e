"""Pieces every layer shares (Kafka's org.apache.kafka.common): importable from the protocol,
the clients, the tools and the broker alike, without going through `kafkapy.server`."""
