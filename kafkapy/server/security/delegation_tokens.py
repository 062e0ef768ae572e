"""Delegation tokens (KIP-48): Kafka's ZooKeeper-era DelegationTokenManager and its token cache.

A token is a random id (a UUID's 16 bytes, URL-safe base64 without padding) and its HMAC: the
HMAC-SHA512 of the id's UTF-8 bytes keyed with `delegation.token.secret.key` (or its older name
`delegation.token.master.key`), so every broker with the same secret derives the same HMAC.
Tokens are enabled only when the secret is set; otherwise every token API answers
DELEGATION_TOKEN_AUTH_DISABLED.

The token's information lives in `/delegation_token/tokens/<tokenId>`
(kafkapy.zk.delegation_token_znodes); each change is announced with a
`/delegation_token/token_changes/token_change_<seq>` znode holding the token id, which every
broker's cache follows (reload the token, or drop it when its znode is gone). The cache keeps,
per token, its SCRAM credentials for SCRAM-SHA-256 and -512 made from the HMAC's base64 text as
the password with 4096 iterations (Kafka's minimum): a client logs in with SCRAM, extension
`tokenauth=true`, the token id as user name and the base64 HMAC as password, and the session's
principal is the token's owner, marked token-authenticated.

Every method that touches ZooKeeper blocks: the broker calls them on executor threads; the
notification handler and the expiry check run on this manager's own thread. `credential` (what
a SCRAM login asks) reads the in-memory cache only.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from kafkapy.protocol.errors import (
    DelegationTokenDisabledException,
    DelegationTokenExpiredException,
    DelegationTokenNotFoundException,
    DelegationTokenOwnerMismatchException,
)
from kafkapy.server.security.principal import KafkaPrincipal
from kafkapy.server.security.scram import MECHANISMS, MIN_ITERATIONS, ScramCredential, make_credential
from kafkapy.zk.delegation_token_znodes import (
    DelegationTokenChangeNotificationZNode,
    DelegationTokenInfoZNode,
    DelegationTokensZNode,
)
from kafkapy.zk.errors import ZkDataError
from kafkapy.zk.watchers import ZNodeChildChangeHandler

log = logging.getLogger("kafkapy.server.DelegationTokenManager")

ERROR_TIMESTAMP = -1
# Kafka's ZkNodeChangeNotificationListener deletes notifications older than 15 minutes.
CHANGE_EXPIRATION_MS = 15 * 60 * 1000


def parse_principal(text: str) -> KafkaPrincipal:
    """Kafka's SecurityUtils.parseKafkaPrincipal: `Type:name`."""
    kind, sep, name = text.partition(":")
    if not sep or not kind:
        raise ValueError(f"expected a string in format principalType:principalName but got {text}")
    return KafkaPrincipal(kind, name)


def _plain(p: KafkaPrincipal) -> KafkaPrincipal:
    """Without the token-authenticated mark."""
    return KafkaPrincipal(p.principal_type, p.name)


def create_hmac(token_id: str, secret: str) -> bytes:
    return hmac.new(secret.encode(), token_id.encode(), hashlib.sha512).digest()


def new_token_id() -> str:
    """Kafka's CoreUtils.generateUuidAsBase64."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def secret_of(config: Any) -> str | None:
    """The secret from delegation.token.secret.key, else delegation.token.master.key; None if unset."""
    for key in ("delegation.token.secret.key", "delegation.token.master.key"):
        value = config.get(key)
        text = getattr(value, "value", value)
        if text:
            return str(text)
    return None


@dataclass(slots=True)
class TokenInformation:
    token_id: str
    owner: KafkaPrincipal
    token_requester: KafkaPrincipal
    renewers: tuple[KafkaPrincipal, ...]
    issue_timestamp: int
    max_timestamp: int
    expiry_timestamp: int

    def owner_or_renewer(self, principal: KafkaPrincipal) -> bool:
        return principal == self.owner or principal in self.renewers

    def expired(self, now_ms: int) -> bool:
        return self.max_timestamp < now_ms or self.expiry_timestamp < now_ms


@dataclass(frozen=True, slots=True)
class DelegationToken:
    info: TokenInformation
    hmac: bytes
    credentials: dict[str, ScramCredential] = field(default_factory=dict, compare=False)

    @property
    def hmac_base64(self) -> str:
        return base64.b64encode(self.hmac).decode()


@dataclass(frozen=True, slots=True)
class CreateTokenResult:
    error: int
    owner: KafkaPrincipal
    requester: KafkaPrincipal
    issue_timestamp: int = ERROR_TIMESTAMP
    expiry_timestamp: int = ERROR_TIMESTAMP
    max_timestamp: int = ERROR_TIMESTAMP
    token_id: str = ""
    hmac: bytes = b""


class _ChangeHandler(ZNodeChildChangeHandler):
    def __init__(self, manager: DelegationTokenManager) -> None:
        super().__init__(DelegationTokenChangeNotificationZNode.path())
        self.manager = manager

    def handle_child_change(self) -> None:
        self.manager.schedule(self.manager.process_notifications)


class DelegationTokenManager:
    def __init__(
        self,
        secret: str | None,
        max_lifetime_ms: int,
        default_renew_ms: int,
        zk: Any,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.secret = secret
        self.max_lifetime_ms = max_lifetime_ms
        self.default_renew_ms = default_renew_ms
        self.zk = zk  # KafkaZkClient
        self._clock = clock
        self._lock = threading.RLock()
        self._tokens: dict[str, DelegationToken] = {}  # token id -> token
        self._by_hmac: dict[str, str] = {}  # base64 HMAC -> token id
        self._seen: dict[str, float] = {}  # notifications applied -> creation time (ms)
        self._thread: ThreadPoolExecutor | None = None

    @classmethod
    def from_config(cls, config: Any, zk: Any) -> DelegationTokenManager:
        return cls(
            secret_of(config),
            int(config.get("delegation.token.max.lifetime.ms")),
            int(config.get("delegation.token.expiry.time.ms")),
            zk,
        )

    @property
    def enabled(self) -> bool:
        return bool(self.secret)

    def now_ms(self) -> int:
        return int(self._clock() * 1000)

    # -- life cycle (blocking) -----------------------------------------------------------------

    def startup(self) -> None:
        if not self.enabled:
            return
        self.zk.make_sure_persistent_path_exists(DelegationTokensZNode.path())
        self.zk.make_sure_persistent_path_exists(DelegationTokenChangeNotificationZNode.path())
        now = float(self.now_ms())
        self._seen = dict.fromkeys(self.zk.get_children(DelegationTokenChangeNotificationZNode.path()), now)
        tokens = self.zk.get_children(DelegationTokensZNode.path())
        log.info("Loading the token cache. Total token count: %d", len(tokens))
        for token_id in tokens:
            self._reload(token_id)
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="delegation-token-listener")
        self.zk.register_znode_child_change_handler(_ChangeHandler(self))

    def close(self) -> None:
        if self._thread is not None:
            self._thread.shutdown(wait=False, cancel_futures=True)
            self._thread = None

    def schedule(self, fn: Callable[[], None]) -> None:
        def run() -> None:
            try:
                fn()
            except Exception:
                log.exception("Error in the delegation token manager")

        if self._thread is None:
            run()
            return
        try:
            self._thread.submit(run)
        except RuntimeError:  # shut down
            pass

    # -- cache ----------------------------------------------------------------------------------

    def _token_from_zk(
        self, token_id: str, previous: DelegationToken | None = None
    ) -> DelegationToken | None:
        got = self.zk.get_data(DelegationTokenInfoZNode.path(token_id))
        fields = DelegationTokenInfoZNode.decode(got[0] if got else None)
        if fields is None:
            return None
        info = TokenInformation(
            fields["token_id"],
            parse_principal(fields["owner"]),
            parse_principal(fields["token_requester"]),
            tuple(parse_principal(r) for r in fields["renewers"]),
            fields["issue_timestamp"],
            fields["max_timestamp"],
            fields["expiry_timestamp"],
        )
        return self._token(info, previous)

    def _token(self, info: TokenInformation, previous: DelegationToken | None = None) -> DelegationToken:
        """The token with its HMAC and SCRAM credentials (PBKDF2: kept from `previous` when the
        HMAC is the same, so a renewal does not derive them again)."""
        assert self.secret is not None
        mac = create_hmac(info.token_id, self.secret)
        if previous is not None and previous.hmac == mac and previous.credentials:
            credentials = previous.credentials  # same id, same secret: same password
        else:
            password = base64.b64encode(mac).decode()
            credentials = {m: make_credential(m, password, MIN_ITERATIONS) for m in MECHANISMS}
        return DelegationToken(info, mac, credentials)

    def _reload(self, token_id: str) -> None:
        try:
            token = self._token_from_zk(token_id, self._tokens.get(token_id))
        except (ZkDataError, ValueError) as e:
            log.error("Error while getting token for tokenId %s: %s", token_id, e)
            return
        with self._lock:
            if token is None:
                self._remove_cache(token_id)
            else:
                self._update_cache(token)

    def _update_cache(self, token: DelegationToken) -> None:
        with self._lock:
            self._tokens[token.info.token_id] = token
            self._by_hmac[token.hmac_base64] = token.info.token_id

    def _remove_cache(self, token_id: str) -> None:
        with self._lock:
            token = self._tokens.pop(token_id, None)
            if token is not None:
                self._by_hmac.pop(token.hmac_base64, None)

    def process_notifications(self) -> None:
        """New token_change_ znodes: reload each named token; purge notifications older than 15 min."""
        path = DelegationTokenChangeNotificationZNode.path()
        children = sorted(self.zk.get_children(path))
        for child in children:
            if child in self._seen:
                continue
            got = self.zk.get_data(f"{path}/{child}")
            self._seen[child] = got[1].ctime if got is not None else 0.0
            if got is None:
                continue
            token_id = DelegationTokenChangeNotificationZNode.decode(got[0])
            log.info("Processing Token Notification for tokenId: %s", token_id)
            self._reload(token_id)
        expired_before = self.now_ms() - CHANGE_EXPIRATION_MS
        for child in [c for c in children if self._seen[c] < expired_before]:
            self.zk.delete_path(f"{path}/{child}")
        self._seen = {c: self._seen[c] for c in children}

    # -- what SCRAM logins ask (cache only, any thread) ------------------------------------------

    def credential(self, mechanism: str, token_id: str) -> tuple[ScramCredential, KafkaPrincipal, int] | None:
        """The token's SCRAM credential, owner and expiry timestamp; None if unknown or expired
        (Kafka gives an expired token's session a lifetime of 0, so it can send nothing)."""
        token = self._tokens.get(token_id)
        if token is None or token.info.expired(self.now_ms()):
            return None
        credential = token.credentials.get(mechanism)
        return None if credential is None else (credential, token.info.owner, token.info.expiry_timestamp)

    # -- the APIs (blocking) --------------------------------------------------------------------

    def _store(self, token: DelegationToken) -> None:
        path = DelegationTokenInfoZNode.path(token.info.token_id)
        data = DelegationTokenInfoZNode.encode(token.info)
        if self.zk.path_exists(path):
            self.zk.set_data(path, data)
        else:
            self.zk.create_recursive(path, data)
        self._update_cache(token)
        self._notify(token.info.token_id)

    def _notify(self, token_id: str) -> None:
        self.zk.create_recursive(
            DelegationTokenChangeNotificationZNode.create_path(),
            DelegationTokenChangeNotificationZNode.encode(token_id),
            sequential=True,
        )

    def remove_token(self, token_id: str) -> None:
        self.zk.delete_path(DelegationTokenInfoZNode.path(token_id))
        self._remove_cache(token_id)
        self._notify(token_id)

    def create_token(
        self,
        owner: KafkaPrincipal,
        requester: KafkaPrincipal,
        renewers: Sequence[KafkaPrincipal],
        max_lifetime_ms: int,
    ) -> CreateTokenResult:
        if not self.enabled:
            return CreateTokenResult(DelegationTokenDisabledException.code, owner, requester)
        with self._lock:
            token_id = new_token_id()
            issue = self.now_ms()
            lifetime = (
                self.max_lifetime_ms if max_lifetime_ms <= 0 else min(max_lifetime_ms, self.max_lifetime_ms)
            )
            max_ts = issue + lifetime
            expiry = min(max_ts, issue + self.default_renew_ms)
            info = TokenInformation(
                token_id,
                _plain(owner),
                _plain(requester),
                tuple(_plain(r) for r in renewers),
                issue,
                max_ts,
                expiry,
            )
            token = self._token(info)
            self._store(token)
            log.info("Created a delegation token: %s for owner: %s", token_id, owner)
            return CreateTokenResult(0, owner, requester, issue, expiry, max_ts, token_id, token.hmac)

    def _by_mac(self, mac: bytes) -> DelegationToken | None:
        token_id = self._by_hmac.get(base64.b64encode(mac).decode())
        return None if token_id is None else self._tokens.get(token_id)

    def renew_token(self, principal: KafkaPrincipal, mac: bytes, renew_ms: int) -> tuple[int, int]:
        """(error code, new expiry timestamp or -1)."""
        if not self.enabled:
            return DelegationTokenDisabledException.code, ERROR_TIMESTAMP
        with self._lock:
            token = self._by_mac(mac)
            if token is None:
                return DelegationTokenNotFoundException.code, ERROR_TIMESTAMP
            info, now = token.info, self.now_ms()
            if not info.owner_or_renewer(principal):
                return DelegationTokenOwnerMismatchException.code, ERROR_TIMESTAMP
            if info.expired(now):
                return DelegationTokenExpiredException.code, ERROR_TIMESTAMP
            expiry = min(info.max_timestamp, now + (self.default_renew_ms if renew_ms < 0 else renew_ms))
            self._store(
                DelegationToken(replace(info, expiry_timestamp=expiry), token.hmac, token.credentials)
            )
            log.info("Delegation token renewed for token: %s for owner: %s", info.token_id, info.owner)
            return 0, expiry

    def expire_token(self, principal: KafkaPrincipal, mac: bytes, expire_ms: int) -> tuple[int, int]:
        if not self.enabled:
            return DelegationTokenDisabledException.code, ERROR_TIMESTAMP
        with self._lock:
            token = self._by_mac(mac)
            if token is None:
                return DelegationTokenNotFoundException.code, ERROR_TIMESTAMP
            info, now = token.info, self.now_ms()
            if not info.owner_or_renewer(principal):
                return DelegationTokenOwnerMismatchException.code, ERROR_TIMESTAMP
            if expire_ms < 0:  # expire now
                self.remove_token(info.token_id)
                log.info("Token expired for token: %s for owner: %s", info.token_id, info.owner)
                return 0, now
            if info.expired(now):
                return DelegationTokenExpiredException.code, ERROR_TIMESTAMP
            expiry = min(info.max_timestamp, now + expire_ms)
            self._store(
                DelegationToken(replace(info, expiry_timestamp=expiry), token.hmac, token.credentials)
            )
            log.info("Updated expiry time for token: %s for owner: %s", info.token_id, info.owner)
            return 0, expiry

    def expire_tokens(self) -> None:
        """The periodic check (delegation.token.expiry.check.interval.ms): remove expired tokens."""
        with self._lock:
            now = self.now_ms()
            for token in list(self._tokens.values()):
                if token.info.expired(now):
                    log.info(
                        "Delegation token expired for token: %s for owner: %s",
                        token.info.token_id,
                        token.info.owner,
                    )
                    self.remove_token(token.info.token_id)

    def tokens(self, eligible: Callable[[TokenInformation], bool]) -> list[DelegationToken]:
        with self._lock:
            return [t for t in self._tokens.values() if eligible(t.info)]
