"""The one Authorizer interface the request handlers ask, and how a broker config picks one.

Kafka's `authorizer.class.name` names a class; kafkapy knows Kafka's two ZooKeeper-era ACL
authorizers (`kafka.security.authorizer.AclAuthorizer` and the older
`kafka.security.auth.SimpleAclAuthorizer`, the same thing under its pre-2.4 name). An empty value
means no authorizer: every request is allowed, as in Kafka. Any other class name stops the
broker at start-up (a typo must not silently leave a cluster open).

`authorize` reads an in-memory cache only: handlers call it on the event loop, once per
resource of a request (never per record).
"""

from __future__ import annotations

from typing import Protocol

from kafkapy.common.config_def import ConfigException
from kafkapy.server.security.acl import Operation, ResourceType
from kafkapy.server.security.principal import KafkaPrincipal

ACL_AUTHORIZER_CLASSES = frozenset(
    {"kafka.security.authorizer.AclAuthorizer", "kafka.security.auth.SimpleAclAuthorizer"}
)


class Authorizer(Protocol):
    def authorize(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: Operation,
        resource_type: ResourceType,
        name: str,
    ) -> bool: ...

    def authorize_by_resource_type(
        self, principal: KafkaPrincipal, host: str, operation: Operation, resource_type: ResourceType
    ) -> bool: ...


def check_authorizer_class(name: str | None) -> bool:
    """Whether `authorizer.class.name` turns on the ACL authorizer; raises for unknown classes."""
    value = (name or "").strip()
    if not value:
        return False
    if value in ACL_AUTHORIZER_CLASSES:
        return True
    raise ConfigException(
        "authorizer.class.name", value, f"kafkapy knows only {', '.join(sorted(ACL_AUTHORIZER_CLASSES))}"
    )
