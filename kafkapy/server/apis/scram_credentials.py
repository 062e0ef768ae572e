"""DescribeUserScramCredentials (50) and AlterUserScramCredentials (51), KIP-554.

The credentials live where kafkapy-configs and Kafka's ZooKeeper-era brokers keep them,
`/config/users/<user>` (kafkapy.server.security.scram); the broker reads them at each login, so
an alteration applies to the next authentication. The client sends the salted password, never
the password: the broker derives stored_key and server_key from it. ZooKeeper I/O runs off the
loop. Per-user errors are values in the response, with Kafka's codes and wording.
Describe needs Describe on the cluster, Alter needs Alter on it (CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import (
    ClusterAuthorizationException,
    DuplicateResourceException,
    ResourceNotFoundException,
    UnacceptableCredentialException,
    UnsupportedSaslMechanismException,
)
from kafkapy.protocol.generated.alter_user_scram_credentials_request import AlterUserScramCredentialsRequest
from kafkapy.protocol.generated.alter_user_scram_credentials_response import (
    AlterUserScramCredentialsResponse,
    AlterUserScramCredentialsResult,
)
from kafkapy.protocol.generated.describe_user_scram_credentials_request import (
    DescribeUserScramCredentialsRequest,
)
from kafkapy.protocol.generated.describe_user_scram_credentials_response import (
    CredentialInfo,
    DescribeUserScramCredentialsResponse,
    DescribeUserScramCredentialsResult,
)
from kafkapy.server.apis.auth_helper import authorize_cluster
from kafkapy.server.apis.kafka_apis import KafkaApis, handles
from kafkapy.server.network.request_channel import Request
from kafkapy.server.security.acl import Operation
from kafkapy.server.security.scram import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    credential_from_salted_password,
    format_credential,
    parse_credential,
)
from kafkapy.zk.config_znodes import desanitize

# Kafka's ScramMechanism type bytes.
MECHANISM_BY_TYPE = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
TYPE_BY_MECHANISM = {v: k for k, v in MECHANISM_BY_TYPE.items()}


def _admin(apis: KafkaApis) -> Any:
    from kafkapy.zk.admin_zk_client import AdminZkClient

    return AdminZkClient(apis.zk)


@handles(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS)
async def handle_describe_user_scram_credentials(
    apis: KafkaApis, request: Request, body: DescribeUserScramCredentialsRequest
) -> DescribeUserScramCredentialsResponse:
    if not authorize_cluster(apis, request, Operation.DESCRIBE):
        code = ClusterAuthorizationException.code
        return DescribeUserScramCredentialsResponse(
            throttle_time_ms=0, error_code=code, error_message=None, results=[]
        )

    def describe() -> list[DescribeUserScramCredentialsResult]:
        admin = _admin(apis)
        wanted = [u.name for u in body.users] if body.users else None
        users = (
            wanted
            if wanted is not None
            else [desanitize(u) for u in apis.zk.get_all_entities_with_config("users")]
        )
        results = []
        for user, count in Counter(users).items():
            if count > 1:
                results.append(
                    _user_error(
                        user,
                        DuplicateResourceException.code,
                        f"Cannot describe SCRAM credentials for the same user twice in a single request: {user}",
                    )
                )
                continue
            configs = admin.fetch_entity_config("users", user)
            infos = [
                CredentialInfo(
                    mechanism=TYPE_BY_MECHANISM[m], iterations=parse_credential(configs[m]).iterations
                )
                for m in TYPE_BY_MECHANISM
                if m in configs
            ]
            if infos:
                results.append(
                    DescribeUserScramCredentialsResult(
                        user=user, error_code=0, error_message=None, credential_infos=infos
                    )
                )
            elif wanted is not None:
                results.append(
                    _user_error(
                        user,
                        ResourceNotFoundException.code,
                        f"Attempt to describe a user credential that does not exist: {user}",
                    )
                )
        return results

    results = await asyncio.get_running_loop().run_in_executor(None, describe)
    return DescribeUserScramCredentialsResponse(
        throttle_time_ms=0, error_code=0, error_message=None, results=results
    )


def _user_error(user: str, code: int, message: str) -> DescribeUserScramCredentialsResult:
    return DescribeUserScramCredentialsResult(
        user=user, error_code=code, error_message=message, credential_infos=[]
    )


@handles(ApiKey.ALTER_USER_SCRAM_CREDENTIALS)
async def handle_alter_user_scram_credentials(
    apis: KafkaApis, request: Request, body: AlterUserScramCredentialsRequest
) -> AlterUserScramCredentialsResponse:
    if not authorize_cluster(apis, request, Operation.ALTER):
        users = dict.fromkeys([d.name for d in body.deletions] + [u.name for u in body.upsertions])
        code = ClusterAuthorizationException.code
        return AlterUserScramCredentialsResponse(
            throttle_time_ms=0,
            results=[
                AlterUserScramCredentialsResult(user=u, error_code=code, error_message=None) for u in users
            ],
        )

    def alter() -> list[AlterUserScramCredentialsResult]:
        admin = _admin(apis)
        errors: dict[str, tuple[int, str]] = {}
        changes: dict[str, list[tuple[str, str | None]]] = {}  # user -> [(mechanism, credential or None)]
        seen: Counter[tuple[str, int]] = Counter(
            [(d.name, d.mechanism) for d in body.deletions] + [(u.name, u.mechanism) for u in body.upsertions]
        )
        for d in body.deletions:
            changes.setdefault(d.name, []).append((MECHANISM_BY_TYPE.get(d.mechanism, ""), None))
        for u in body.upsertions:
            mechanism = MECHANISM_BY_TYPE.get(u.mechanism, "")
            if mechanism and not MIN_ITERATIONS <= u.iterations <= MAX_ITERATIONS:
                errors.setdefault(u.name, (UnacceptableCredentialException.code,
                                           f"Requested iterations {u.iterations} is outside {MIN_ITERATIONS}-{MAX_ITERATIONS}"))  # fmt: skip
                continue
            if not u.salted_password:
                errors.setdefault(u.name, (UnacceptableCredentialException.code, "Salted password is empty"))
                continue
            credential = credential_from_salted_password(
                mechanism or "SCRAM-SHA-256", bytes(u.salt), bytes(u.salted_password), u.iterations
            )
            changes.setdefault(u.name, []).append((mechanism, format_credential(credential)))
        for (user, _), count in seen.items():
            if count > 1:
                errors.setdefault(
                    user,
                    (
                        DuplicateResourceException.code,
                        "A user credential cannot be altered twice in the same request",
                    ),
                )
        results = []
        for user, user_changes in changes.items():
            if user not in errors and any(m == "" for m, _ in user_changes):
                errors[user] = (UnsupportedSaslMechanismException.code, "Unknown SCRAM mechanism")
            if user not in errors:
                configs = dict(admin.fetch_entity_config("users", user))
                for mechanism, formatted in user_changes:
                    if formatted is None and mechanism not in configs:
                        errors[user] = (
                            ResourceNotFoundException.code,
                            f"Attempt to delete a user credential that does not exist: {user}",
                        )
                        break
                    if formatted is None:
                        configs.pop(mechanism)
                    else:
                        configs[mechanism] = formatted
                else:
                    admin.change_entity_config("users", user, configs)
            code, message = errors.get(user, (0, None))
            results.append(AlterUserScramCredentialsResult(user=user, error_code=code, error_message=message))
        return results

    results = await asyncio.get_running_loop().run_in_executor(None, alter)
    return AlterUserScramCredentialsResponse(throttle_time_ms=0, results=results)
