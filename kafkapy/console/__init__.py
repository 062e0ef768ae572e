"""kafkapy-console: a web console for any Kafka-compatible cluster, in its own process, reading
the cluster through the Kafka protocol, the brokers' Prometheus endpoints and optionally ZooKeeper.

app.py/cli.py serve the pages (read_model.py, records_view.py, zk_view.py gather them);
operations.py: the operator actions of the kafkapy-* tools as async calls (OperationError
carries Kafka's error name), offered by actions.py behind confirmations; history.py: background
samplers of group lag and topic throughput kept in bounded rings, plotted through plots.py.
"""
