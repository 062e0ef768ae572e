"""Creating __transaction_state on first use (FindCoordinator for a transactional id), through
the normal controller path, as Kafka's TransactionCoordinator does via the admin manager."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from kafkapy.protocol.errors import KafkaError, TopicExistsException
from kafkapy.server.apis.kafka_apis import KafkaApis
from kafkapy.server.transaction.transaction_state_manager import (
    TRANSACTION_STATE_TOPIC_NAME,
    transaction_topic_configs,
)

log = logging.getLogger("kafkapy.server.KafkaApis")


def _create_transaction_topic(apis: KafkaApis) -> None:
    """Write __transaction_state's znodes; the controller does the rest (blocking: io thread)."""
    from kafkapy.zk.admin_zk_client import AdminZkClient

    config = apis.config
    live = len(apis.zk.get_sorted_broker_list())
    # Capped by the live brokers, as kafkapy does for __consumer_offsets, so that a single
    # test broker gets its topic.
    rf = max(1, min(int(config.transaction_state_log_replication_factor), live))
    try:
        AdminZkClient(apis.zk).create_topic(
            TRANSACTION_STATE_TOPIC_NAME,
            int(config.transaction_state_log_num_partitions),
            rf,
            transaction_topic_configs(config),
        )
        log.info("Created %s with replication factor %d", TRANSACTION_STATE_TOPIC_NAME, rf)
    except KafkaError as e:
        if e.code != TopicExistsException.code:  # another broker or request got there first
            raise


async def ensure_transaction_topic(apis: KafkaApis, tc: Any) -> None:
    if tc.topic_creation is None or tc.topic_creation.done():
        tc.topic_creation = asyncio.get_running_loop().run_in_executor(None, _create_transaction_topic, apis)
    try:
        await asyncio.shield(tc.topic_creation)
    except Exception as e:
        log.warning("Could not create %s: %s", TRANSACTION_STATE_TOPIC_NAME, e)
