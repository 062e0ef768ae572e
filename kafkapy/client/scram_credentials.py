"""DescribeUserScramCredentials / AlterUserScramCredentials (KIP-554) over the AdminClient: what
Kafka's Admin.describeUserScramCredentials and alterUserScramCredentials give kafkapy-configs.
The password never leaves the client: it sends a random salt and the salted password
(PBKDF2-HMAC, RFC 5802's Hi), as Kafka's admin client does."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass

from kafkapy.client.admin import AdminClient, raise_for_error
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import KafkaError, for_code
from kafkapy.protocol.generated.alter_user_scram_credentials_request import (
    AlterUserScramCredentialsRequest,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from kafkapy.protocol.generated.describe_user_scram_credentials_request import (
    DescribeUserScramCredentialsRequest,
    UserName,
)

MECHANISM_TYPES = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}  # Kafka's ScramMechanism type bytes
_NAMES = {v: k for k, v in MECHANISM_TYPES.items()}
_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
SALT_BYTES = 32


@dataclass(frozen=True, slots=True)
class Upsertion:
    user: str
    mechanism: str
    iterations: int
    password: str


@dataclass(frozen=True, slots=True)
class UserScramDescription:
    """A user's credentials as (mechanism, iterations), or the error the broker answered for it."""

    user: str
    credentials: tuple[tuple[str, int], ...]
    error: KafkaError | None = None


def describe_user_scram_credentials(
    admin: AdminClient, users: Sequence[str] | None
) -> list[UserScramDescription]:
    """The named users (None: every user with a credential)."""
    answer = admin.send_to_node(
        None, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, "describeUserScramCredentials",
        lambda v: DescribeUserScramCredentialsRequest(users=None if users is None else [UserName(name=u) for u in users]),
    )  # fmt: skip
    raise_for_error(answer.error_code, answer.error_message)
    out = []
    for r in answer.results:
        error = for_code(r.error_code, r.error_message or "") if r.error_code else None
        creds = tuple((_NAMES.get(c.mechanism, "UNKNOWN"), c.iterations) for c in r.credential_infos or [])
        out.append(UserScramDescription(r.user, creds, error))
    return out


def alter_user_scram_credentials(
    admin: AdminClient, upsertions: Sequence[Upsertion], deletions: Sequence[tuple[str, str]]
) -> None:
    """Set (salted here) and delete (user, mechanism) credentials; the first error is raised."""

    def upsertion(u: Upsertion) -> ScramCredentialUpsertion:
        salt = os.urandom(SALT_BYTES)
        salted = hashlib.pbkdf2_hmac(_HASHES[u.mechanism], u.password.encode(), salt, u.iterations)
        return ScramCredentialUpsertion(
            name=u.user,
            mechanism=MECHANISM_TYPES[u.mechanism],
            iterations=u.iterations,
            salt=salt,
            salted_password=salted,
        )

    answer = admin.send_to_node(
        None, ApiKey.ALTER_USER_SCRAM_CREDENTIALS, "alterUserScramCredentials",
        lambda v: AlterUserScramCredentialsRequest(
            deletions=[ScramCredentialDeletion(name=user, mechanism=MECHANISM_TYPES[m]) for user, m in deletions],
            upsertions=[upsertion(u) for u in upsertions],
        ),
    )  # fmt: skip
    for r in answer.results:
        raise_for_error(r.error_code, r.error_message)
