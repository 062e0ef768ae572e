"""Client quota entities and KIP-55's precedence (Kafka's DefaultQuotaCallback), without I/O.

A quota is configured on an entity: a user, a client id, or a user and a client id together,
each name either a real name or `<default>`. In ZooKeeper they are `/config/users/<user>`,
`/config/clients/<client-id>` and `/config/users/<user>/clients/<client-id>` (names sanitized),
and a change notification names them as `users/<u>`, `clients/<c>` or `users/<u>/clients/<c>`.

For a request from (user, client id) the first entity in this order holding the quota wins:

    1. /config/users/<user>/clients/<client-id>     5. /config/users/<default>/clients/<default>
    2. /config/users/<user>/clients/<default>       6. /config/users/<default>
    3. /config/users/<user>                         7. /config/clients/<client-id>
    4. /config/users/<default>/clients/<client-id>  8. /config/clients/<default>

The winner also decides who shares the measured rate (Kafka's metric tags): a user quota is
shared by all clients of that user, a client-id quota by every user using that client id.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from kafkapy.zk.config_znodes import desanitize

DEFAULT = "<default>"  # Kafka's ConfigEntityName.Default

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"  # KIP-599: stored and described, not enforced
QUOTA_CONFIGS = frozenset(
    {PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE, CONTROLLER_MUTATION_RATE}
)


class QuotaType(Enum):
    """Kafka's ClientQuotaType, with the config key that bounds it."""

    PRODUCE = PRODUCER_BYTE_RATE
    FETCH = CONSUMER_BYTE_RATE
    REQUEST = REQUEST_PERCENTAGE


@dataclass(frozen=True, slots=True)
class QuotaEntity:
    """One configured entity. `user`/`client_id`: None when the entity has no such part,
    DEFAULT for `<default>`, else the (desanitized) name."""

    user: str | None
    client_id: str | None


@dataclass(frozen=True, slots=True)
class QuotaMatch:
    """What a (user, client id) is held to: the bound and who shares its measured rate
    (Kafka's metric tags: "" where the quota does not distinguish)."""

    limit: float
    user_tag: str
    client_tag: str


def entity_from_path(entity_path: str) -> QuotaEntity | None:
    """`users/u`, `clients/c`, `users/u/clients/c` (sanitized names) as an entity; None for
    other paths (topics, brokers) or malformed ones."""
    parts = entity_path.split("/")
    if len(parts) == 2 and parts[0] == "users":
        return QuotaEntity(_name(parts[1]), None)
    if len(parts) == 2 and parts[0] == "clients":
        return QuotaEntity(None, _name(parts[1]))
    if len(parts) == 4 and parts[0] == "users" and parts[2] == "clients":
        return QuotaEntity(_name(parts[1]), _name(parts[3]))
    return None


def _name(sanitized: str) -> str:
    return sanitized if sanitized == DEFAULT else desanitize(sanitized)


def quota_values(config: Mapping[str, str]) -> dict[str, float]:
    """The quota keys of an entity's ZooKeeper config as numbers; other keys (a user's SCRAM
    credentials) and unparsable values are left out."""
    values: dict[str, float] = {}
    for key, value in config.items():
        if key in QUOTA_CONFIGS:
            try:
                values[key] = float(value)
            except ValueError:
                continue
    return values


def resolve(
    quotas: Mapping[QuotaEntity, Mapping[str, float]],
    key: str,
    user: str,
    client_id: str,
    static_client_default: float | None = None,
) -> QuotaMatch | None:
    """The quota `key` for requests of (user, client id) in KIP-55's order; the static
    `quota.producer/consumer.default` applies per client id when nothing is configured; None:
    unbounded."""
    for entity_user, entity_client, user_tag, client_tag in (
        (user, client_id, user, client_id),
        (user, DEFAULT, user, client_id),
        (user, None, user, ""),
        (DEFAULT, client_id, user, client_id),
        (DEFAULT, DEFAULT, user, client_id),
        (DEFAULT, None, user, ""),
        (None, client_id, "", client_id),
        (None, DEFAULT, "", client_id),
    ):
        values = quotas.get(QuotaEntity(entity_user, entity_client))
        if values is not None:
            limit = values.get(key)
            if limit is not None:
                return QuotaMatch(limit, user_tag, client_tag)
    if static_client_default is not None:
        return QuotaMatch(static_client_default, "", client_id)
    return None
