"""kafkapy-reassign-partitions' parts: the pure JSON/placement/status rules (reassignment_json),
the actions through a broker (admin_actions, KIP-455) and through ZooKeeper (zk_actions)."""
