"""CreateDelegationToken / RenewDelegationToken / ExpireDelegationToken / DescribeDelegationToken
(KIP-48) over the AdminClient: what Kafka's Admin.createDelegationToken and friends give
kafkapy-delegation-tokens. Any broker answers them; errors raise Kafka's typed exceptions."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass

from kafkapy.client.admin import AdminClient, raise_for_error
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.generated.create_delegation_token_request import (
    CreatableRenewers,
    CreateDelegationTokenRequest,
)
from kafkapy.protocol.generated.describe_delegation_token_request import (
    DescribeDelegationTokenOwner,
    DescribeDelegationTokenRequest,
)
from kafkapy.protocol.generated.expire_delegation_token_request import ExpireDelegationTokenRequest
from kafkapy.protocol.generated.renew_delegation_token_request import RenewDelegationTokenRequest


@dataclass(frozen=True, slots=True)
class TokenDescription:
    token_id: str
    hmac: bytes
    owner: str  # "User:alice"
    requester: str
    renewers: tuple[str, ...]
    issue_timestamp: int
    expiry_timestamp: int
    max_timestamp: int

    @property
    def hmac_base64(self) -> str:
        return base64.b64encode(self.hmac).decode()


def _split(principal: str) -> tuple[str, str]:
    kind, sep, name = principal.strip().partition(":")
    if not sep or not kind:
        raise ValueError(f"expected a string in format principalType:principalName but got {principal}")
    return kind, name


def create_token(
    admin: AdminClient, renewers: Sequence[str] = (), max_lifetime_ms: int = -1, owner: str | None = None
) -> TokenDescription:
    def build(version: int) -> CreateDelegationTokenRequest:
        kind, name = _split(owner) if owner else (None, None)
        return CreateDelegationTokenRequest(
            owner_principal_type=kind,
            owner_principal_name=name,
            renewers=[CreatableRenewers(*_split(r)) for r in renewers],
            max_lifetime_ms=max_lifetime_ms,
        )

    r = admin.send_to_node(None, ApiKey.CREATE_DELEGATION_TOKEN, "createDelegationToken", build)
    raise_for_error(r.error_code)
    owner_text = f"{r.principal_type}:{r.principal_name}"
    requester = (
        f"{r.token_requester_principal_type}:{r.token_requester_principal_name}"
        if r.token_requester_principal_type else owner_text
    )  # fmt: skip
    return TokenDescription(
        r.token_id, bytes(r.hmac), owner_text, requester, tuple(renewers),
        r.issue_timestamp_ms, r.expiry_timestamp_ms, r.max_timestamp_ms,
    )  # fmt: skip


def renew_token(admin: AdminClient, hmac: bytes, renew_period_ms: int = -1) -> int:
    """The new expiry timestamp."""
    r = admin.send_to_node(
        None, ApiKey.RENEW_DELEGATION_TOKEN, "renewDelegationToken",
        lambda v: RenewDelegationTokenRequest(hmac=hmac, renew_period_ms=renew_period_ms),
    )  # fmt: skip
    raise_for_error(r.error_code)
    return int(r.expiry_timestamp_ms)


def expire_token(admin: AdminClient, hmac: bytes, expiry_period_ms: int = -1) -> int:
    r = admin.send_to_node(
        None, ApiKey.EXPIRE_DELEGATION_TOKEN, "expireDelegationToken",
        lambda v: ExpireDelegationTokenRequest(hmac=hmac, expiry_time_period_ms=expiry_period_ms),
    )  # fmt: skip
    raise_for_error(r.error_code)
    return int(r.expiry_timestamp_ms)


def describe_tokens(admin: AdminClient, owners: Sequence[str] | None = None) -> list[TokenDescription]:
    """Kafka's Admin: no owners (None or empty) describes every token the caller may see."""
    wanted = [DescribeDelegationTokenOwner(*_split(o)) for o in owners] if owners else None
    r = admin.send_to_node(
        None,
        ApiKey.DESCRIBE_DELEGATION_TOKEN,
        "describeDelegationToken",
        lambda v: DescribeDelegationTokenRequest(owners=wanted),
    )
    raise_for_error(r.error_code)
    out = []
    for t in r.tokens:
        owner = f"{t.principal_type}:{t.principal_name}"
        requester = (
            f"{t.token_requester_principal_type}:{t.token_requester_principal_name}"
            if t.token_requester_principal_type else owner
        )  # fmt: skip
        out.append(
            TokenDescription(
                t.token_id,
                bytes(t.hmac),
                owner,
                requester,
                tuple(f"{x.principal_type}:{x.principal_name}" for x in t.renewers),
                t.issue_timestamp,
                t.expiry_timestamp,
                t.max_timestamp,
            )  # fmt: skip
        )
    return out
