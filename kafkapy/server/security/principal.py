"""KafkaPrincipal and the mapping of a client certificate's distinguished name to a user name.

Kafka's DefaultKafkaPrincipalBuilder names an SSL client `User:<DN>` with the DN as Java's
`X500Principal.getName()` prints it (RFC 2253: most specific RDN first, `CN=client,O=org,C=US`),
after `ssl.principal.mapping.rules` (KIP-371): a list of `RULE:pattern/replacement/[LU]` and
`DEFAULT`, the first rule whose pattern matches the whole DN wins, DEFAULT keeps the DN as is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafkapy.common.config_def import ConfigException

USER_TYPE = "User"


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    principal_type: str
    name: str
    # Authenticated with a delegation token (Kafka's tokenAuthenticated): not part of equality,
    # so ACLs and owner checks see the token's owner; such a principal may not manage tokens.
    token_authenticated: bool = field(default=False, compare=False)

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"


ANONYMOUS = KafkaPrincipal(USER_TYPE, "ANONYMOUS")

# Python's ssl module names attributes by their OpenSSL long names; Java prints the RFC 2253
# keywords (and the OID for attributes it has no keyword for, which we approximate by name).
_RFC2253_KEYWORDS: Mapping[str, str] = {
    "commonName": "CN",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "countryName": "C",
    "stateOrProvinceName": "ST",
    "localityName": "L",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
    "emailAddress": "EMAILADDRESS",
}


def _escape_rdn_value(value: str) -> str:
    """RFC 2253 escaping of an attribute value, as X500Principal.getName() does."""
    out = []
    for i, ch in enumerate(value):
        if ch in ',+"\\<>;' or (ch == "#" and i == 0) or (ch == " " and i in (0, len(value) - 1)):
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def distinguished_name(peercert: Mapping[str, Any]) -> str:
    """The RFC 2253 DN of `SSLSocket.getpeercert()`'s subject: RDNs reversed (the certificate
    lists the most general first), multi-valued RDNs joined with '+'."""
    rdns = []
    for rdn in reversed(peercert.get("subject", ())):
        rdns.append("+".join(f"{_RFC2253_KEYWORDS.get(k, k)}={_escape_rdn_value(v)}" for k, v in rdn))
    return ",".join(rdns)


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str
    case: str  # "", "L" or "U"

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        match = self.pattern.fullmatch(dn)
        if match is None:
            return None
        # Java's Matcher.replaceAll syntax ($1) into Python's (\g<1>).
        result = match.expand(re.sub(r"\$(\d+)", r"\\g<\1>", self.replacement))
        return result.lower() if self.case == "L" else result.upper() if self.case == "U" else result


_RULE = re.compile(r"\s*((DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?))\s*(,|$)")


class SslPrincipalMapper:
    """ssl.principal.mapping.rules, parsed once per listener."""

    def __init__(self, rules: Sequence[_Rule]) -> None:
        self.rules = tuple(rules)

    @classmethod
    def from_rules(cls, text: str | Sequence[str] | None) -> SslPrincipalMapper:
        if text is None:
            return cls([_Rule(None, "", "")])
        if not isinstance(text, str):
            text = ",".join(text)
        rules: list[_Rule] = []
        pos = 0
        text = text.strip()
        while pos < len(text):
            match = _RULE.match(text, pos)
            if match is None or match.end() == pos:
                raise ConfigException("ssl.principal.mapping.rules", text, f"Invalid rule: {text[pos:]}")
            if match.group(2):
                rules.append(_Rule(None, "", ""))
            else:
                rules.append(_Rule(re.compile(match.group(3)), match.group(5), match.group(7)))
            pos = match.end()
        return cls(rules or [_Rule(None, "", "")])

    def name(self, dn: str) -> str:
        for rule in self.rules:
            result = rule.apply(dn)
            if result is not None:
                return result
        raise ValueError(f"No rules apply to {dn}, rules {self.rules}")

    def principal(self, peercert: Mapping[str, Any] | None) -> KafkaPrincipal:
        """The principal of a TLS client: ANONYMOUS when it showed no certificate."""
        if not peercert:
            return ANONYMOUS
        return KafkaPrincipal(USER_TYPE, self.name(distinguished_name(peercert)))
