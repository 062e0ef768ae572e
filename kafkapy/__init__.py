"""kafkapy: Apache Kafka (ZooKeeper era) in Python."""
