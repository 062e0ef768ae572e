"""The pieces of `kafkapy-topics` (Kafka 2.8's TopicCommand): option checks and parsing,
describe formatting, and one topic service per mode (ZooKeeper or --bootstrap-server)."""
