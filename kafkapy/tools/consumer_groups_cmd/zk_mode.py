"""kafkapy-consumer-groups --zookeeper: groups of the old ZooKeeper-based consumer.

As Kafka's ConsumerGroupCommand did before the old consumer was removed: --list, --describe
(offsets, with the OWNER column) and --delete, read from and written to /consumers/<group>.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafkapy.consumer_legacy import zk_groups
from kafkapy.zk.kafka_zk_client import KafkaZkClient

Printer = Callable[[str], None]

ZK_ACTIONS = ("list", "describe", "delete")


def check_zk_args(has: set[str]) -> str | None:
    """The usage error for --zookeeper with what it cannot do, or None."""
    if "bootstrap-server" in has:
        return "Option [bootstrap-server] can't be used with option [zookeeper]"
    unsupported = [a for a in ("reset-offsets", "delete-offsets") if a in has]
    if unsupported:
        return f"Option [{unsupported[0]}] is only supported with --bootstrap-server"
    if ("describe" in has or "delete" in has) and "group" not in has:
        action = "describe" if "describe" in has else "delete"
        return f"Option [{action}] takes the option: [group]"
    return None


def run_zk(connect: str, has: set[str], options: dict[str, Any], out: Printer) -> int:
    zk = KafkaZkClient(connect, 30000, 30000)
    zk.start()
    try:
        if "list" in has:
            for group in zk_groups.list_groups(zk):
                out(group)
            return 0
        failed = False
        for group in options["group"]:
            if "describe" in has:
                if not zk_groups.group_exists(zk, group):
                    out(f"Consumer group `{group}` does not exist.")
                    failed = True
                    continue
                if not zk_groups.active_members(zk, group):
                    out(f"Consumer group '{group}' has no active members.")
                for line in zk_groups.format_describe(zk_groups.describe_group(zk, group)):
                    out(line)
            else:
                result = zk_groups.delete_group(zk, group)
                out(result.message)
                failed = failed or not result.deleted
        return 1 if failed else 0
    finally:
        zk.close()
