"""The log cleaner (Kafka's LogCleaner): compaction of cleanup.policy=compact logs."""
