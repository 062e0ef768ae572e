"""The broker's metrics (Kafka's names, as the Prometheus JMX exporter exposes them).

Hot-path state (meters.py) is plain attributes bumped by the one thread that owns them; the
Prometheus collector (collector.py) reads it, and computes gauges from broker state, at scrape
time on the HTTP server's own thread (http_server.py). Nothing here takes a lock the request
path takes.
"""
