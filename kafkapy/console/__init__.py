"""kafkapy-console: a web console over a kafkapy (or Kafka) cluster.

operations.py: the operator actions of the kafkapy-* tools as async calls (OperationError
carries Kafka's error name); history.py: background samplers of group lag and topic throughput
kept in bounded rings for the plots.
"""
