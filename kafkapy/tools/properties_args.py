"""Shared option handling of the client tools: `k=v` lists and properties files.

Kafka's tools merge a config file (--producer.config / --consumer.config), then `k=v`
overrides (--producer-property, --producer-props), then the values of their own options.
"""

from __future__ import annotations

from collections.abc import Iterable

import click

from kafkapy.common.properties import PropertiesError, load_file


def parse_kv(items: Iterable[str], option: str) -> dict[str, str]:
    """['a=1', 'b=x=y'] -> {'a': '1', 'b': 'x=y'}; a malformed item is a usage error."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.UsageError(f"Invalid {option} value {item!r}: expected key=value")
        out[key.strip()] = value
    return out


def load_config(path: str | None) -> dict[str, str]:
    if not path:
        return {}
    try:
        return load_file(path)
    except (OSError, PropertiesError) as e:
        raise click.UsageError(f"Cannot read {path}: {e}") from e


def merge(path: str | None, overrides: Iterable[str], option: str) -> dict[str, str]:
    return {**load_config(path), **parse_kv(overrides, option)}


def unescape(text: str) -> str:
    r"""Kafka's tools take separators like '\t' written out on the command line."""
    return text.encode("latin-1", "backslashreplace").decode("unicode_escape")
