"""kafka-request.log: Kafka's "Completed request:..." line for every request answered.

Kafka's RequestChannel writes it to the `kafka.request.logger` logger when that logger is at
DEBUG (one summary line), with the request's contents when it is at TRACE. Checking the level
costs one cached lookup per request; building the line only happens when it is enabled.
"""

from __future__ import annotations

import logging

from kafkapy.server.network.request_channel import Request

request_logger = logging.getLogger("kafka.request.logger")


def _ms(ns: int) -> str:
    return f"{ns / 1e6:.3f}"


def request_header_desc(request: Request, api_name: str) -> str:
    h = request.header
    return (
        f"RequestHeader(apiKey={api_name}, apiVersion={h.api_version}, clientId={h.client_id}, "
        f"correlationId={h.correlation_id})"
    )


def completed_request_line(
    request: Request,
    api_name: str,
    details: str | None,
    response_bytes: int,
    security_protocol: str,
    times_ns: tuple[int, int, int, int, int],
) -> str:
    """Kafka's line: request description, response, connection, then the times in ms."""
    received, started, local_done, ready, end = times_ns
    desc = request_header_desc(request, api_name)
    if details is not None:
        desc = f"{desc} -- {details}"
    return (
        f"Completed request:{desc},response:{{size={response_bytes}}} from connection {request.connection_id};"
        f"totalTime:{_ms(end - received)},requestQueueTime:{_ms(started - received)},"
        f"localTime:{_ms(local_done - started)},remoteTime:{_ms(ready - local_done)},throttleTime:0,"
        f"responseQueueTime:0.000,sendTime:{_ms(end - ready)},securityProtocol:{security_protocol},"
        f"principal:{request.principal},listener:{request.listener_name},"
        f"clientInformation:ClientInformation(softwareName=unknown, softwareVersion=unknown)"
    )


def request_details(request: Request, max_elements: int) -> str:
    """The decoded request body, for TRACE (decoded again from the frame: only when TRACE is on)."""
    from kafkapy.protocol import messages

    h = request.header
    try:
        body = messages.decode_request(
            h.api_key, h.api_version, request.buffer, request.body_offset, max_elements
        )
    except Exception as e:  # noqa: BLE001 - a log line must never fail the request
        return f"<undecodable: {e}>"
    return str(body)
