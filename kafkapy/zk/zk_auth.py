"""Authenticating to ZooKeeper and Kafka's znode ACLs (`zookeeper.set.acl`).

Kafka's broker and tools take their ZooKeeper identity from the `Client` section of the JAAS
file named by `-Djava.security.auth.login.config=<path>` (set through `KAFKA_OPTS`), e.g.

    Client {
      org.apache.zookeeper.server.auth.DigestLoginModule required
      username="kafka" password="kafka-secret";
    };

kafkapy reads the same file from the same `KAFKA_OPTS` variable. It authenticates with
ZooKeeper's built-in `digest` scheme (`addauth digest user:password`, kazoo's `auth_data`)
rather than SASL DIGEST-MD5: the identity is the same username/password pair, and the digest
scheme needs no SASL provider on the ZooKeeper server. The ACLs are Kafka's ZkData.defaultAcls:
the creator's authenticated identity gets ALL and the world READ, except on sensitive paths
(credentials under /config/users and /config/brokers, delegation tokens), which the world cannot
read, and /consumers, which stays open.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from kazoo.security import ACL, CREATOR_ALL_ACL, OPEN_ACL_UNSAFE, READ_ACL_UNSAFE

from kafkapy.common.jaas import JaasConfigError, parse_jaas_config

LOGIN_CONFIG_PROPERTY = "java.security.auth.login.config"
# ZooKeeper's system property naming the JAAS section of the client (ZKClientConfig).
CLIENT_SECTION_PROPERTY = "zookeeper.sasl.clientconfig"
DEFAULT_CLIENT_SECTION = "Client"

# Kafka's ZkData.SensitiveRootPaths and ConsumerPathZNode.
SENSITIVE_ROOT_PATHS: tuple[str, ...] = ("/config/users", "/config/brokers", "/delegation_token")
CONSUMERS_PATH = "/consumers"

SECURE_ACL_ERROR = "zookeeper.set.acl is true, but the verification of the JAAS login file failed."


@dataclass(frozen=True, slots=True)
class ZkCredentials:
    username: str
    password: str

    @property
    def auth_data(self) -> list[tuple[str, str]]:
        """kazoo's auth_data: ZooKeeper's `digest` scheme."""
        return [("digest", f"{self.username}:{self.password}")]


def _system_properties(env: Mapping[str, str]) -> dict[str, str]:
    """The -Dkey=value options in KAFKA_OPTS."""
    props: dict[str, str] = {}
    try:
        words = shlex.split(env.get("KAFKA_OPTS", ""))
    except ValueError:
        words = env.get("KAFKA_OPTS", "").split()
    for word in words:
        if word.startswith("-D") and "=" in word:
            key, _, value = word[2:].partition("=")
            props[key] = value
    return props


def login_config_path(env: Mapping[str, str] | None = None) -> str | None:
    """The JAAS file KAFKA_OPTS names with -Djava.security.auth.login.config, if any."""
    return _system_properties(os.environ if env is None else env).get(LOGIN_CONFIG_PROPERTY) or None


def jaas_sections(text: str) -> dict[str, str]:
    """`Name { ... };` sections of a JAAS file: name -> body."""
    body = re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.DOTALL)
    return {m.group(1): m.group(2) for m in re.finditer(r"([\w.-]+)\s*\{(.*?)\}\s*;", body, re.DOTALL)}


def credentials_from_jaas(text: str, section: str = DEFAULT_CLIENT_SECTION) -> ZkCredentials | None:
    """The username/password of the `section` login module, None when there is no such section."""
    body = jaas_sections(text).get(section)
    if body is None:
        return None
    for module in parse_jaas_config(body):
        username, password = module.options.get("username"), module.options.get("password")
        if username is not None and password is not None:
            return ZkCredentials(username, password)
    raise JaasConfigError(f"JAAS section '{section}' has no username and password for ZooKeeper")


def zk_credentials(env: Mapping[str, str] | None = None) -> ZkCredentials | None:
    """The ZooKeeper client identity configured the Kafka way, None when there is none.

    Raises JaasConfigError when KAFKA_OPTS names a JAAS file that cannot be read or parsed."""
    env = os.environ if env is None else env
    props = _system_properties(env)
    path = props.get(LOGIN_CONFIG_PROPERTY)
    if not path:
        return None
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise JaasConfigError(f"Could not read the JAAS file {path}: {e}") from e
    return credentials_from_jaas(text, props.get(CLIENT_SECTION_PROPERTY, DEFAULT_CLIENT_SECTION))


def sensitive_path(path: str) -> bool:
    return any(path == root or path.startswith(root + "/") for root in SENSITIVE_ROOT_PATHS)


def default_acls(secure: bool, path: str) -> list[ACL]:
    """Kafka's ZkData.defaultAcls(isSecure, path)."""
    if secure and path != CONSUMERS_PATH:
        acls = list(CREATOR_ALL_ACL)
        if not sensitive_path(path):
            acls += READ_ACL_UNSAFE
        return acls
    return list(OPEN_ACL_UNSAFE)


class ZkSecurity(TypedDict):
    credentials: ZkCredentials | None
    secure_acls: bool


def tool_zk_security(env: Mapping[str, str] | None = None) -> ZkSecurity:
    """KafkaZkClient keyword arguments for a tool: like Kafka's tools (isSecure =
    JaasUtils.isZkSaslEnabled), it authenticates and creates secure znodes when KAFKA_OPTS names
    a JAAS file with ZooKeeper credentials."""
    credentials = zk_credentials(env)
    return {"credentials": credentials, "secure_acls": credentials is not None}


NO_AUTH_HINT = (
    "the znode is secured (zookeeper.set.acl=true): set KAFKA_OPTS="
    "-Djava.security.auth.login.config=<JAAS file with a Client section> to write it"
)
