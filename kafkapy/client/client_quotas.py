"""DescribeClientQuotas / AlterClientQuotas (KIP-546) over the AdminClient: what Kafka's
Admin.describeClientQuotas and alterClientQuotas give kafkapy-configs. Entities are
{"user": name, "client-id": name}, None naming the default entity."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kafkapy.client.admin import AdminClient, raise_for_error
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.generated.alter_client_quotas_request import (
    AlterClientQuotasRequest,
    EntityData,
    EntryData,
    OpData,
)
from kafkapy.protocol.generated.describe_client_quotas_request import (
    ComponentData,
    DescribeClientQuotasRequest,
)

USER, CLIENT_ID = "user", "client-id"
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2

Entity = Mapping[str, str | None]


@dataclass(frozen=True, slots=True)
class FilterComponent:
    """Kafka's ClientQuotaFilterComponent: ofEntity (exact), ofDefaultEntity, ofEntityType."""

    entity_type: str
    match_type: int
    match: str | None = None

    @classmethod
    def of_entity(cls, entity_type: str, name: str) -> FilterComponent:
        return cls(entity_type, MATCH_EXACT, name)

    @classmethod
    def of_default_entity(cls, entity_type: str) -> FilterComponent:
        return cls(entity_type, MATCH_DEFAULT)

    @classmethod
    def of_entity_type(cls, entity_type: str) -> FilterComponent:
        return cls(entity_type, MATCH_SPECIFIED)


def describe_client_quotas(
    admin: AdminClient, components: Sequence[FilterComponent], strict: bool = False
) -> list[tuple[dict[str, str | None], dict[str, float]]]:
    """The entities matching the filter and their quota values, as the broker orders them."""
    answer = admin.send_to_node(
        None, ApiKey.DESCRIBE_CLIENT_QUOTAS, "describeClientQuotas",
        lambda v: DescribeClientQuotasRequest(
            components=[ComponentData(entity_type=c.entity_type, match_type=c.match_type, match=c.match)
                        for c in components],
            strict=strict,
        ),
    )  # fmt: skip
    raise_for_error(answer.error_code, answer.error_message)
    return [
        ({e.entity_type: e.entity_name for e in entry.entity}, {v.key: v.value for v in entry.values})
        for entry in answer.entries or []
    ]


def alter_client_quotas(
    admin: AdminClient, entity: Entity, ops: Mapping[str, float | None], validate_only: bool = False
) -> None:
    """Set (a number) or remove (None) each quota key of one entity."""
    answer = admin.send_to_node(
        None, ApiKey.ALTER_CLIENT_QUOTAS, "alterClientQuotas",
        lambda v: AlterClientQuotasRequest(
            entries=[EntryData(
                entity=[EntityData(entity_type=t, entity_name=n) for t, n in entity.items()],
                ops=[OpData(key=k, value=0.0 if value is None else float(value), remove=value is None)
                     for k, value in ops.items()],
            )],
            validate_only=validate_only,
        ),
    )  # fmt: skip
    for entry in answer.entries:
        raise_for_error(entry.error_code, entry.error_message)
