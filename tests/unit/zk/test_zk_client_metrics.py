"""The ZooKeeper client reports its meters through the ZkClientMetrics it is given (issue 14:
kafkapy.zk does not import the broker's metrics); without one it reports nothing."""

from __future__ import annotations

from typing import Any

from kazoo.protocol.states import KazooState

from kafkapy.zk.zk_io import NO_METRICS, ZkClientMetrics, ZkIO


class _Retrying:
    def retry(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)


def test_requests_and_session_events_reach_the_given_meters() -> None:
    latencies: list[int] = []
    events: list[str] = []
    zk = ZkIO(
        "127.0.0.1:1",
        metrics=ZkClientMetrics(
            request_latency_ns=latencies.append,
            disconnected=lambda: events.append("disconnected"),
            expired=lambda: events.append("expired"),
        ),
    )
    try:
        zk._zk = _Retrying()  # type: ignore[assignment]
        assert zk._retry(lambda path: path, "/brokers") == "/brokers"
        assert len(latencies) == 1 and latencies[0] >= 0
        zk._on_state(KazooState.SUSPENDED)
        assert events == ["disconnected"]
    finally:
        zk._session_executor.shutdown()


def test_a_client_without_meters_reports_nothing() -> None:
    zk = ZkIO("127.0.0.1:1")
    try:
        assert zk.metrics is NO_METRICS
        zk._zk = _Retrying()  # type: ignore[assignment]
        assert zk._retry(lambda: 7) == 7
    finally:
        zk._session_executor.shutdown()
