"""The Prometheus endpoint: prometheus_client's WSGI server on threads of its own.

Opened only when `kafkapy.metrics.port` is set (>= 0; 0 binds any free port). Scrapes run on
the server's threads, never on the broker's event loop.
"""

from __future__ import annotations

import logging
import threading
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server

log = logging.getLogger("kafkapy.server.metrics.MetricsServer")


class MetricsServer:
    def __init__(self, host: str, port: int, registry: CollectorRegistry) -> None:
        self._host = host
        self._port = port
        self._registry = registry
        self._httpd: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._httpd.server_port if self._httpd is not None else -1

    def start(self) -> None:
        self._httpd, self._thread = start_http_server(self._port, self._host, self._registry)
        log.info("Metrics endpoint listening on http://%s:%d/metrics", self._host or "0.0.0.0", self.port)

    def stop(self) -> None:
        """Blocking (waits for the serving thread): call it off the event loop."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
