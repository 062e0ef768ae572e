"""JAAS configuration lines as Kafka's `sasl.jaas.config` takes them.

    <LoginModule class> <flag> [<key>=<value> ...];

Kafka's JaasConfig tokenizes with Java's StreamTokenizer: values are bare words or quoted
strings (with backslash escapes), `//` and `/* */` comments are skipped, and the line must end
with `;`. Several modules may follow each other; Kafka's broker takes exactly one per mechanism.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

FLAGS = ("required", "requisite", "sufficient", "optional")


class JaasConfigError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class LoginModule:
    name: str
    flag: str
    options: dict[str, str] = field(default_factory=dict)


_TOKEN = re.compile(
    r"""\s*(?:
        (?P<comment>//[^\n]*|/\*.*?\*/)
      | "(?P<dq>(?:\\.|[^"\\])*)"
      | '(?P<sq>(?:\\.|[^'\\])*)'
      | (?P<punct>[=;])
      | (?P<word>[^\s=;"']+)
    )""",
    re.VERBOSE | re.DOTALL,
)


def _tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text) pairs; kind is 'word', 'string' or the punctuation itself."""
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = _TOKEN.match(text, pos)
        if match is None:
            raise JaasConfigError(f"Unexpected character at {pos} in JAAS config")
        pos = match.end()
        if match.group("comment") is not None:
            continue
        quoted = match.group("dq") if match.group("dq") is not None else match.group("sq")
        if quoted is not None:
            out.append(("string", re.sub(r"\\(.)", r"\1", quoted)))
        elif match.group("punct") is not None:
            out.append((match.group("punct"), match.group("punct")))
        else:
            out.append(("word", match.group("word")))
    return out


def parse_jaas_config(text: str) -> list[LoginModule]:
    tokens = _tokens(text)
    modules: list[LoginModule] = []
    i = 0
    while i < len(tokens):
        kind, name = tokens[i]
        if kind != "word":
            raise JaasConfigError(f"Expected a login module name, found '{name}'")
        if i + 1 >= len(tokens) or tokens[i + 1][1].lower() not in FLAGS:
            raise JaasConfigError(f"Login module control flag not specified in JAAS config for {name}")
        flag = tokens[i + 1][1].lower()
        i += 2
        options: dict[str, str] = {}
        while True:
            if i >= len(tokens):
                raise JaasConfigError("JAAS config entry not terminated by semi-colon")
            kind, key = tokens[i]
            if kind == ";":
                i += 1
                break
            if (
                kind != "word"
                or i + 2 >= len(tokens)
                or tokens[i + 1][0] != "="
                or tokens[i + 2][0]
                not in (
                    "word",
                    "string",
                )
            ):
                raise JaasConfigError(f"Value not specified for key '{key}' in JAAS config")
            options[key] = tokens[i + 2][1]
            i += 3
        modules.append(LoginModule(name, flag, options))
    if not modules:
        raise JaasConfigError("JAAS config has no login module")
    return modules


def single_module(text: str, what: str) -> LoginModule:
    """The one login module Kafka allows in a broker's or client's sasl.jaas.config."""
    modules = parse_jaas_config(text)
    if len(modules) != 1:
        raise JaasConfigError(
            f"JAAS config property contains {len(modules)} login modules, should be 1 module ({what})"
        )
    return modules[0]
