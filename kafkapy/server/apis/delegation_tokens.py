"""CreateDelegationToken (38), RenewDelegationToken (39), ExpireDelegationToken (40),
DescribeDelegationToken (41): KIP-48, as Kafka's ZooKeeper-era KafkaApis answers them.

Token requests are refused with DELEGATION_TOKEN_REQUEST_NOT_ALLOWED on a PLAINTEXT listener,
from an anonymous client of an SSL listener, and over a connection that itself authenticated
with a delegation token (Kafka's allowTokenRequests). Renew and expire need the token's owner
or one of its renewers (DELEGATION_TOKEN_OWNER_MISMATCH). Describe shows a token to its owner
and renewers, and to whoever has Describe on `DelegationToken:<tokenId>`. kafkapy's authorizer
has no `User` resource type: Kafka's DescribeTokens on `User:<owner>` is not asked, and creating
a token for another owner (v3) needs Alter on the Cluster where Kafka asks CreateTokens on
`User:<owner>` (DELEGATION_TOKEN_AUTHORIZATION_FAILED otherwise).

The manager (kafkapy.server.security.delegation_tokens) writes ZooKeeper: its calls run off the
loop.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import (
    DelegationTokenAuthorizationException,
    DelegationTokenDisabledException,
    UnsupportedByAuthenticationException,
)
from kafkapy.protocol.generated.create_delegation_token_request import CreateDelegationTokenRequest
from kafkapy.protocol.generated.create_delegation_token_response import CreateDelegationTokenResponse
from kafkapy.protocol.generated.describe_delegation_token_request import DescribeDelegationTokenRequest
from kafkapy.protocol.generated.describe_delegation_token_response import (
    DescribedDelegationToken,
    DescribedDelegationTokenRenewer,
    DescribeDelegationTokenResponse,
)
from kafkapy.protocol.generated.expire_delegation_token_request import ExpireDelegationTokenRequest
from kafkapy.protocol.generated.expire_delegation_token_response import ExpireDelegationTokenResponse
from kafkapy.protocol.generated.renew_delegation_token_request import RenewDelegationTokenRequest
from kafkapy.protocol.generated.renew_delegation_token_response import RenewDelegationTokenResponse
from kafkapy.server.apis.auth_helper import authorize, authorize_cluster
from kafkapy.server.apis.kafka_apis import KafkaApis, handles
from kafkapy.server.network.request_channel import Request
from kafkapy.server.security.acl import Operation, ResourceType
from kafkapy.server.security.delegation_tokens import (
    ERROR_TIMESTAMP,
    DelegationTokenManager,
    TokenInformation,
)
from kafkapy.server.security.principal import ANONYMOUS, KafkaPrincipal


def _manager(apis: KafkaApis) -> DelegationTokenManager:
    return apis.token_manager


def _security_protocol(apis: KafkaApis, request: Request) -> str:
    for ep in apis.config.listener_endpoints():
        if ep.listener_name == request.listener_name:
            return str(ep.security_protocol)
    return "PLAINTEXT"


def allow_token_requests(apis: KafkaApis, request: Request) -> bool:
    protocol = _security_protocol(apis, request)
    return not (
        request.principal.token_authenticated
        or protocol == "PLAINTEXT"
        or (protocol == "SSL" and request.principal == ANONYMOUS)
    )


def _enabled(apis: KafkaApis) -> bool:
    manager = _manager(apis)
    return manager is not None and bool(manager.enabled)


async def _off_loop(fn: Any, *args: Any) -> Any:
    return await asyncio.get_running_loop().run_in_executor(None, fn, *args)


def _create_response(
    code: int,
    owner: KafkaPrincipal,
    requester: KafkaPrincipal,
    *,
    issue: int = ERROR_TIMESTAMP,
    expiry: int = ERROR_TIMESTAMP,
    max_ts: int = ERROR_TIMESTAMP,
    token_id: str = "",
    hmac: bytes = b"",
) -> CreateDelegationTokenResponse:
    return CreateDelegationTokenResponse(
        error_code=code,
        principal_type=owner.principal_type,
        principal_name=owner.name,
        token_requester_principal_type=requester.principal_type,
        token_requester_principal_name=requester.name,
        issue_timestamp_ms=issue,
        expiry_timestamp_ms=expiry,
        max_timestamp_ms=max_ts,
        token_id=token_id,
        hmac=hmac,
        throttle_time_ms=0,
    )


@handles(ApiKey.CREATE_DELEGATION_TOKEN)
async def handle_create_delegation_token(
    apis: KafkaApis, request: Request, body: CreateDelegationTokenRequest
) -> CreateDelegationTokenResponse:
    requester = request.principal
    owner_name = getattr(body, "owner_principal_name", None)
    owner = requester if not owner_name else KafkaPrincipal(body.owner_principal_type or "User", owner_name)
    if not allow_token_requests(apis, request):
        return _create_response(UnsupportedByAuthenticationException.code, owner, requester)
    if not _enabled(apis):
        return _create_response(DelegationTokenDisabledException.code, owner, requester)
    if owner != requester and not authorize_cluster(apis, request, Operation.ALTER):
        return _create_response(DelegationTokenAuthorizationException.code, owner, requester)
    renewers = [KafkaPrincipal(r.principal_type, r.principal_name) for r in body.renewers]
    result = await _off_loop(_manager(apis).create_token, owner, requester, renewers, body.max_lifetime_ms)
    return _create_response(
        result.error, result.owner, result.requester, issue=result.issue_timestamp,
        expiry=result.expiry_timestamp, max_ts=result.max_timestamp, token_id=result.token_id, hmac=result.hmac,
    )  # fmt: skip


async def _renew_or_expire(
    apis: KafkaApis, request: Request, method: str, mac: bytes, period_ms: int
) -> tuple[int, int]:
    """(error code, expiry timestamp) of a renewal or expiry."""
    if not allow_token_requests(apis, request):
        code, expiry = UnsupportedByAuthenticationException.code, ERROR_TIMESTAMP
    elif not _enabled(apis):
        code, expiry = DelegationTokenDisabledException.code, ERROR_TIMESTAMP
    else:
        code, expiry = await _off_loop(getattr(_manager(apis), method), request.principal, mac, period_ms)
    return code, expiry


@handles(ApiKey.RENEW_DELEGATION_TOKEN)
async def handle_renew_delegation_token(
    apis: KafkaApis, request: Request, body: RenewDelegationTokenRequest
) -> RenewDelegationTokenResponse:
    code, expiry = await _renew_or_expire(
        apis, request, "renew_token", bytes(body.hmac), body.renew_period_ms
    )
    return RenewDelegationTokenResponse(error_code=code, expiry_timestamp_ms=expiry, throttle_time_ms=0)


@handles(ApiKey.EXPIRE_DELEGATION_TOKEN)
async def handle_expire_delegation_token(
    apis: KafkaApis, request: Request, body: ExpireDelegationTokenRequest
) -> ExpireDelegationTokenResponse:
    code, expiry = await _renew_or_expire(
        apis, request, "expire_token", bytes(body.hmac), body.expiry_time_period_ms
    )
    return ExpireDelegationTokenResponse(error_code=code, expiry_timestamp_ms=expiry, throttle_time_ms=0)


@handles(ApiKey.DESCRIBE_DELEGATION_TOKEN)
def handle_describe_delegation_token(
    apis: KafkaApis, request: Request, body: DescribeDelegationTokenRequest
) -> DescribeDelegationTokenResponse:
    if not allow_token_requests(apis, request):
        code = UnsupportedByAuthenticationException.code
        return DescribeDelegationTokenResponse(error_code=code, tokens=[], throttle_time_ms=0)
    if not _enabled(apis):
        code = DelegationTokenDisabledException.code
        return DescribeDelegationTokenResponse(error_code=code, tokens=[], throttle_time_ms=0)
    if body.owners is not None and not body.owners:
        return DescribeDelegationTokenResponse(error_code=0, tokens=[], throttle_time_ms=0)
    owners = (
        None
        if body.owners is None
        else [KafkaPrincipal(o.principal_type, o.principal_name) for o in body.owners]
    )
    requester = request.principal

    def eligible(info: TokenInformation) -> bool:
        # Kafka's DelegationTokenManager.filterToken.
        if owners is not None and not any(info.owner_or_renewer(o) for o in owners):
            return False
        if info.owner_or_renewer(requester):
            return True
        return authorize(apis, request, Operation.DESCRIBE, ResourceType.DELEGATION_TOKEN, info.token_id)

    # The cache is in memory: no ZooKeeper round trip.
    tokens = _manager(apis).tokens(eligible)
    return DescribeDelegationTokenResponse(
        error_code=0,
        tokens=[
            DescribedDelegationToken(
                principal_type=t.info.owner.principal_type,
                principal_name=t.info.owner.name,
                token_requester_principal_type=t.info.token_requester.principal_type,
                token_requester_principal_name=t.info.token_requester.name,
                issue_timestamp=t.info.issue_timestamp,
                expiry_timestamp=t.info.expiry_timestamp,
                max_timestamp=t.info.max_timestamp,
                token_id=t.info.token_id,
                hmac=t.hmac,
                renewers=[
                    DescribedDelegationTokenRenewer(principal_type=r.principal_type, principal_name=r.name)
                    for r in t.info.renewers
                ],
            )
            for t in sorted(tokens, key=lambda t: t.info.issue_timestamp)
        ],
        throttle_time_ms=0,
    )
