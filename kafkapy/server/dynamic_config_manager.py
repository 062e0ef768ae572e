"""DynamicConfigManager: applies topic, broker and client quota config changes announced under
/config/changes.

Tools and AlterConfigs write /config/topics/<t> and then a sequential
/config/changes/config_change_N naming it; every broker watches the change list (never the
configs themselves, as Kafka does), reads the entities named by notifications it has not yet
processed, and hands the new LogConfig to the logs of that topic. Quota entities (`users/u`,
`clients/c`, `users/u/clients/c`) go to the client quota managers (Kafka's UserConfigHandler and
ClientIdConfigHandler).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any

from kafkapy.zk.watchers import ZNodeChildChangeHandler

log = logging.getLogger("kafkapy.server.DynamicConfigManager")

CHANGES_PATH = "/config/changes"
PREFIX = "config_change_"


class DynamicConfigManager:
    def __init__(
        self,
        zk: Any,
        apply_topic_config: Callable[[str], None],
        apply_broker_config: Callable[[str], None] | None = None,
        apply_quota_config: Callable[[str], None] | None = None,
    ) -> None:
        self.zk = zk
        self.apply_topic_config = apply_topic_config  # blocking: re-reads the topic's config
        # blocking: re-reads /config/brokers/<id or <default>> (Kafka's BrokerConfigHandler)
        self.apply_broker_config = apply_broker_config
        # blocking: re-reads the quota entity at this sanitized path ("users/u/clients/c", ...)
        self.apply_quota_config = apply_quota_config
        self._last_seen = -1
        self._lock = threading.Lock()

    def startup(self) -> None:
        # Changes made before this broker started are already in /config/topics.
        self._last_seen = max((self._seq(c) for c in self.zk.get_children(CHANGES_PATH)), default=-1)
        self.zk.register_znode_child_change_handler(_ChangesHandler(self))

    @staticmethod
    def _seq(name: str) -> int:
        try:
            return int(name[len(PREFIX) :])
        except ValueError:
            return -1

    def process_notifications(self) -> None:
        with self._lock:
            for child in sorted(self.zk.get_children(CHANGES_PATH), key=self._seq):
                seq = self._seq(child)
                if seq <= self._last_seen:
                    continue
                self._last_seen = seq
                got = self.zk.get_data(f"{CHANGES_PATH}/{child}")
                if got is None:
                    continue
                try:
                    entity_path = json.loads(got[0])["entity_path"]
                except (ValueError, KeyError, TypeError):
                    log.warning("Ignoring malformed config change notification %s", child)
                    continue
                entity_type, _, name = entity_path.partition("/")
                if entity_type == "topics":
                    log.info("Processing override for entityPath: %s", entity_path)
                    try:
                        self.apply_topic_config(name)
                    except Exception:
                        log.exception("Failed to apply config change for topic %s", name)
                elif entity_type == "brokers" and self.apply_broker_config is not None:
                    log.info("Processing override for entityPath: %s", entity_path)
                    try:
                        self.apply_broker_config(name)
                    except Exception:
                        log.exception("Failed to apply config change for broker %s", name)
                elif entity_type in ("users", "clients") and self.apply_quota_config is not None:
                    log.info("Processing override for entityPath: %s", entity_path)
                    try:
                        self.apply_quota_config(entity_path)
                    except Exception:
                        log.exception("Failed to apply config change for entity %s", entity_path)


class _ChangesHandler(ZNodeChildChangeHandler):
    def __init__(self, manager: DynamicConfigManager) -> None:
        super().__init__(CHANGES_PATH)
        self.manager = manager

    def handle_child_change(self) -> None:
        self.manager.process_notifications()
