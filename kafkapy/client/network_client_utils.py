"""Blocking use of a NetworkClient by single-threaded callers (the consumer, the tools, Spark).

Each helper drives `client.poll` on the calling thread until what it waits for has happened
or its timeout has passed, as Kafka's NetworkClientUtils does for its blocking callers.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from kafkapy.client.cluster import ClusterMetadata
from kafkapy.client.connection import RequestTimeoutError
from kafkapy.client.network_client import Builder, NetworkClient
from kafkapy.protocol.api_keys import ApiKey


def await_ready(client: NetworkClient, node_id: int, timeout: float) -> None:
    """Poll until a request can be sent to `node_id`, connecting to it if need be."""
    deadline = time.monotonic() + timeout
    while not client.ready(node_id):
        left = deadline - time.monotonic()
        if left <= 0:
            raise RequestTimeoutError(f"node {node_id} not ready within {timeout}s")
        client.poll(min(left, 0.05 if client.connection_failed(node_id) else left))


def send_and_receive(
    client: NetworkClient,
    node_id: int,
    api_key: ApiKey,
    body: Builder | Any,
    *,
    timeout: float | None = None,
    max_version: int | None = None,
) -> Any:
    """Send one request and poll until its response arrives; raise its failure."""
    timeout = client.request_timeout if timeout is None else timeout
    deadline = time.monotonic() + timeout
    await_ready(client, node_id, timeout)
    result: list[Any] = []
    client.send(node_id, api_key, body, lambda r, e: result.append((r, e)), max_version=max_version)
    while not result:
        left = deadline - time.monotonic()
        if left <= 0:
            raise RequestTimeoutError(f"{api_key.name} to node {node_id}: no response within {timeout}s")
        client.poll(left)
    resp, exc = result[0]
    if exc is not None:
        raise exc
    return resp


def await_metadata(client: NetworkClient, topics: Iterable[str], timeout: float) -> ClusterMetadata:
    """Poll until metadata names every topic in `topics` (or raise a timeout)."""
    wanted = set(topics)
    client.add_topics(wanted)
    deadline = time.monotonic() + timeout
    while True:
        cluster = client.cluster
        if cluster.updated_at and wanted <= set(cluster.topics) | set(cluster.topic_errors):
            return cluster
        left = deadline - time.monotonic()
        if left <= 0:
            raise RequestTimeoutError(f"Topic(s) {sorted(wanted)} not present in metadata after {timeout}s")
        client.poll(min(left, 0.1))
