"""ConnectionQuotas: Kafka's connection limits, counted at accept time.

- `max.connections.per.ip` / `max.connections.per.ip.overrides`: a connection over its
  address's limit is accepted and closed at once, with Kafka's INFO line ("Rejected connection
  from /1.2.3.4, address already has the configured maximum of N connections.").
- `max.connections` (KIP-402): a connection over the broker-wide limit is not refused but left
  in the listen backlog: the acceptor stops accepting until a connection closes, as Kafka's
  acceptor blocks in `waitForConnectionSlot`. With several listeners the inter-broker one is
  protected: it always accepts, and the least recently active connection of another listener
  is closed to make room (Kafka's `maxConnectionsExceeded` / lowest-priority channel).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Mapping


class TooManyConnectionsError(Exception):
    """Kafka's TooManyConnectionsException."""

    def __init__(self, ip: str, count: int) -> None:
        super().__init__(f"Too many connections from /{ip} (maximum = {count})")
        self.ip = ip
        self.count = count


def normalize_ip(address: str) -> str:
    """An IPv4 peer of a dual-stack socket as Java shows it: 127.0.0.1, not ::ffff:127.0.0.1."""
    if address.startswith("::ffff:") and "." in address:
        return address[7:]
    return address


def resolve_override_hosts(overrides: Mapping[str, int]) -> dict[str, int]:
    """Kafka keys the overrides by InetAddress.getByName(host): a host name counts as its first
    address. An unknown host fails start-up (Kafka's UnknownHostException)."""
    resolved: dict[str, int] = {}
    for host, count in overrides.items():
        try:
            ip = str(ipaddress.ip_address(host.strip("[]")))
        except ValueError:
            try:
                ip = str(socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)[0][4][0])
            except OSError as e:
                raise ValueError(f"max.connections.per.ip.overrides: unknown host {host}: {e}") from e
        resolved[normalize_ip(ip)] = count
    return resolved


class ConnectionQuotas:
    def __init__(
        self,
        max_connections: int,
        max_connections_per_ip: int,
        overrides: Mapping[str, int],
        protected_listener: str | None = None,
    ) -> None:
        self.max_connections = max_connections
        self.default_max_per_ip = max_connections_per_ip
        self.overrides = resolve_override_hosts(overrides)
        self.protected_listener = protected_listener
        self.total = 0
        self._counts: dict[str, int] = {}
        self._slot_waiters: list[Callable[[], None]] = []

    def max_for(self, ip: str) -> int:
        return self.overrides.get(ip, self.default_max_per_ip)

    def get(self, ip: str) -> int:
        return self._counts.get(ip, 0)

    def slot_available(self, listener_name: str) -> bool:
        return listener_name == self.protected_listener or self.total < self.max_connections

    def max_connections_exceeded(self, listener_name: str) -> bool:
        return self.total > self.max_connections and listener_name != self.protected_listener

    def wait_for_slot(self, wake: Callable[[], None]) -> None:
        """`wake` is called once a connection closes (the acceptor then checks again)."""
        self._slot_waiters.append(wake)

    def inc(self, ip: str) -> None:
        """Count a new connection from `ip`, or raise TooManyConnectionsError (nothing counted)."""
        count = self._counts.get(ip, 0)
        limit = self.overrides.get(ip, self.default_max_per_ip)
        if count >= limit:
            raise TooManyConnectionsError(ip, limit)
        self._counts[ip] = count + 1
        self.total += 1

    def dec(self, ip: str) -> None:
        count = self._counts.get(ip, 0)
        if count <= 1:
            self._counts.pop(ip, None)
        else:
            self._counts[ip] = count - 1
        self.total -= 1
        if self._slot_waiters and self.total < self.max_connections:
            waiters, self._slot_waiters = self._slot_waiters, []
            for wake in waiters:
                wake()
