"""Delegation token znodes (KIP-48), as Kafka's ZooKeeper-era DelegationTokenManagerZk keeps them.

  /delegation_token/tokens/<tokenId>   {"version":3,"owner":"User%3Aalice","tokenRequester":...,
                                        "renewers":[...],"issueTimestamp":..,"maxTimestamp":..,
                                        "expiryTimestamp":..,"tokenId":".."}
  /delegation_token/token_changes/token_change_<seq>   the token id that changed (UTF-8)

Principals are stored as `Type:name` through Kafka's Sanitizer (URL encoding). The HMAC and the
SCRAM credentials are not stored: every broker derives them from the token id and its secret.
"""

from __future__ import annotations

import json
from typing import Any

from kafkapy.zk.config_znodes import desanitize, sanitize
from kafkapy.zk.errors import ZkDataError

CURRENT_VERSION = 3


class DelegationTokenAuthZNode:
    @staticmethod
    def path() -> str:
        return "/delegation_token"


class DelegationTokensZNode:
    @staticmethod
    def path() -> str:
        return "/delegation_token/tokens"


class DelegationTokenChangeNotificationZNode:
    SEQUENCE_PREFIX = "token_change_"

    @staticmethod
    def path() -> str:
        return "/delegation_token/token_changes"

    @classmethod
    def create_path(cls) -> str:
        return f"{cls.path()}/{cls.SEQUENCE_PREFIX}"

    @staticmethod
    def encode(token_id: str) -> bytes:
        return token_id.encode()

    @staticmethod
    def decode(data: bytes) -> str:
        return data.decode()


class DelegationTokenInfoZNode:
    @staticmethod
    def path(token_id: str) -> str:
        return f"{DelegationTokensZNode.path()}/{token_id}"

    @staticmethod
    def encode(info: Any) -> bytes:
        """`info` is a kafkapy.server.security.delegation_tokens.TokenInformation."""
        return json.dumps(
            {
                "version": CURRENT_VERSION,
                "owner": sanitize(str(info.owner)),
                "tokenRequester": sanitize(str(info.token_requester)),
                "renewers": [sanitize(str(r)) for r in info.renewers],
                "issueTimestamp": info.issue_timestamp,
                "maxTimestamp": info.max_timestamp,
                "expiryTimestamp": info.expiry_timestamp,
                "tokenId": info.token_id,
            },
            separators=(",", ":"),
        ).encode()

    @staticmethod
    def decode(data: bytes | None) -> dict[str, Any] | None:
        """The JSON's fields with principals as `Type:name` strings; None for an empty znode."""
        if not data:
            return None
        try:
            js = json.loads(data)
            version = int(js["version"])
            if not 0 < version <= CURRENT_VERSION:
                raise ZkDataError(f"Unsupported delegation token version {version}")
            owner = desanitize(js["owner"])
            return {
                "owner": owner,
                "token_requester": desanitize(js["tokenRequester"]) if version >= 3 else owner,
                "renewers": [desanitize(r) for r in js["renewers"]],
                "issue_timestamp": int(js["issueTimestamp"]),
                "max_timestamp": int(js["maxTimestamp"]),
                "expiry_timestamp": int(js["expiryTimestamp"]),
                "token_id": str(js["tokenId"]),
            }
        except (ValueError, KeyError, TypeError) as e:
            raise ZkDataError(f"Invalid delegation token znode: {e}") from e
