"""Listener endpoints and the ZooKeeper connect string, parsed as Kafka parses them."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from kafkapy.common.config_def import ConfigException
from kafkapy.server.config_keys import SECURITY_PROTOCOLS

# Kafka's endpoint syntax: NAME://host:port, host may be empty (all interfaces) or [ipv6].
_ENDPOINT = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*?)\]?:(-?[0-9]+)$")
ZOOKEEPER_DEFAULT_PORT = 2181


class EndPoint(NamedTuple):
    """A listener; a tuple (listener_name, security_protocol, host, port) so it unpacks too."""

    listener_name: str
    security_protocol: str
    host: str  # "" binds every interface
    port: int  # 0 binds an ephemeral port

    def connection_string(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener_name}://{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class ZkConnect:
    """zookeeper.connect split as Kafka (and ZooKeeper's ConnectStringParser) split it."""

    hosts: str  # "h1:2181,h2:2181", what kazoo takes as `hosts`
    chroot: str | None  # "/kafka", or None
    addresses: tuple[tuple[str, int], ...]


def parse_zk_connect(connect: str) -> ZkConnect:
    connect = connect.strip()
    slash = connect.find("/")
    hosts, chroot = (connect, None) if slash < 0 else (connect[:slash], connect[slash:])
    if chroot is not None:
        if chroot == "/":
            chroot = None  # ZooKeeper treats a bare "/" as no chroot
        elif chroot.endswith("/") or "//" in chroot:
            raise ConfigException("zookeeper.connect", connect, f"Invalid chroot path {chroot}")
    addresses = []
    for part in hosts.split(","):
        part = part.strip()
        if not part:
            continue
        host, port = part, ZOOKEEPER_DEFAULT_PORT
        if part.startswith("["):  # [ipv6]:port
            end = part.find("]")
            host, rest = part[1:end], part[end + 1 :]
            if rest.startswith(":"):
                port = _port("zookeeper.connect", connect, rest[1:])
        elif part.count(":") == 1:
            host, port_text = part.split(":")
            port = _port("zookeeper.connect", connect, port_text)
        addresses.append((host, port))
    if not addresses:
        raise ConfigException("zookeeper.connect", connect, "No ZooKeeper host:port given")
    return ZkConnect(hosts.strip(), chroot, tuple(addresses))


def _port(name: str, value: str, text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise ConfigException(name, value, f"Invalid port {text}")
    return int(text)


def is_loopback_host(host: str) -> bool:
    """True for localhost names and loopback IP literals (no DNS lookup)."""
    if host.lower() in ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def parse_protocol_map(raw: str) -> dict[str, str]:
    """listener.security.protocol.map: NAME:PROTOCOL pairs, names upper-cased as Kafka does."""
    mapping: dict[str, str] = {}
    for entry in filter(None, (e.strip() for e in raw.split(","))):
        name, sep, protocol = entry.partition(":")
        protocol = protocol.strip().upper()
        if not sep or not name.strip() or protocol not in SECURITY_PROTOCOLS:
            raise ConfigException(
                "listener.security.protocol.map",
                raw,
                f"Entry {entry} is not NAME:PROTOCOL with PROTOCOL one of {', '.join(SECURITY_PROTOCOLS)}",
            )
        mapping[name.strip().upper()] = protocol
    return mapping


def parse_listeners(key: str, raw: str, protocol_map: Mapping[str, str]) -> list[EndPoint]:
    """listeners / advertised.listeners: NAME://host:port, comma-separated."""
    endpoints: list[EndPoint] = []
    for item in filter(None, (s.strip() for s in raw.split(","))):
        match = _ENDPOINT.match(item)
        if match is None:
            raise ConfigException(key, raw, f"Unable to parse {item} to a broker endpoint")
        name, host, port = match.group(1).upper(), match.group(2), int(match.group(3))
        if not 0 <= port <= 65535:
            raise ConfigException(key, raw, f"Port {port} of {item} is out of range")
        protocol = protocol_map.get(name)
        if protocol is None:
            raise ConfigException(key, raw, f"No security protocol defined for listener {name}")
        endpoints.append(EndPoint(name, protocol, host, port))
    names = [ep.listener_name for ep in endpoints]
    if len(set(names)) != len(names):
        raise ConfigException(key, raw, "Each listener must have a different name")
    ports = [ep.port for ep in endpoints if ep.port != 0]
    if key == "listeners" and len(set(ports)) != len(ports):
        raise ConfigException(key, raw, "Each listener must have a different port")
    return endpoints
