"""Every KafkaApis handler is typed at its seam: the generated request class in, the generated
response class out (or a coroutine of it), and no `Any` in its signature. A new handler written
against dicts fails here instead of on the wire."""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterator

import pytest

from kafkapy.protocol import messages
from kafkapy.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey
from kafkapy.server.apis.kafka_apis import HANDLERS


def _registered() -> dict[int, Callable[..., object]]:
    # KafkaApis imports the handler modules (which fill HANDLERS) when it is built; import them
    # the same way without a server.
    from kafkapy.server.apis import (
        acls,
        api_versions,
        client_quotas,
        cluster,
        configs,
        controller_requests,
        delegation_tokens,
        elect_leaders,
        fetch,
        groups,
        list_offsets,
        log_dirs,
        metadata,
        offset_for_leader_epoch,
        produce,
        producer_ids,
        reassignments,
        records,
        sasl,
        scram_credentials,
        topics,
        transaction_admin,
        transactions,
    )

    # Only the modules typed so far: a family added later joins by being imported above (so the
    # result does not depend on which other tests imported which handler modules first).
    typed = {m.__name__ for m in (
        acls, api_versions, client_quotas, cluster, configs, controller_requests, delegation_tokens,
        elect_leaders, fetch, groups, list_offsets, log_dirs, metadata, offset_for_leader_epoch, produce,
        producer_ids, reassignments, records, sasl, scram_credentials, topics, transaction_admin, transactions,
    )} | {"kafkapy.server.apis.offsets"}  # fmt: skip
    return {k: h.fn for k, h in HANDLERS.items() if not h.raw and h.fn.__module__ in typed}


def _flatten(hint: object) -> Iterator[object]:
    yield hint
    for arg in typing.get_args(hint):
        yield from _flatten(arg)


@pytest.mark.timeout(60)
def test_every_handler_takes_and_returns_the_generated_classes() -> None:
    handlers = _registered()
    assert len(handlers) > 30
    for key, fn in handlers.items():
        hints = typing.get_type_hints(fn)
        version = SUPPORTED_VERSIONS[ApiKey(key)][1]
        request_cls = messages.message_class(key, version, "request")
        response_cls = messages.message_class(key, version, "response")
        assert hints["body"] is request_cls, (fn.__name__, hints["body"])
        assert response_cls in set(_flatten(hints["return"])), (fn.__name__, hints["return"])
        for name, hint in hints.items():
            assert typing.Any not in set(_flatten(hint)), (fn.__name__, name, hint)
