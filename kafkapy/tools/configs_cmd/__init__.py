"""kafkapy-configs' parts: the pure option rules (options), the actions through a broker
(admin_actions) and through ZooKeeper (zk_actions)."""
