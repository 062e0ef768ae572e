"""kafkapy-delegation-tokens' option checks (Kafka's DelegationTokenCommandOptions) and its table.
Invariants: exactly one action; bootstrap server and command config required; each action's
required and forbidden options refused with exit code 1 before any connection is made."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from kafkapy.client.delegation_tokens import TokenDescription
from kafkapy.tools.delegation_tokens import command, print_tokens

BASE = ["--bootstrap-server", "127.0.0.1:1", "--command-config", "/nonexistent"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (BASE, "Command must include exactly one action: --create, --renew, --expire or --describe"),
        ([*BASE, "--create", "--describe"], "exactly one action"),
        (["--describe", "--command-config", "x"], 'Missing required argument "[bootstrap-server]"'),
        (["--describe", "--bootstrap-server", "h:1"], 'Missing required argument "[command-config]"'),
        ([*BASE, "--create"], 'Missing required argument "[max-life-time-period]"'),
        ([*BASE, "--renew", "--hmac", "x"], 'Missing required argument "[renew-time-period]"'),
        ([*BASE, "--expire", "--expiry-time-period", "-1"], 'Missing required argument "[hmac]"'),
        (
            [*BASE, "--create", "--max-life-time-period", "-1", "--hmac", "x"],
            'Option "[create]" can\'t be used with option "[hmac]"',
        ),
        ([*BASE, "--describe", "--hmac", "x"], 'Option "[describe]" can\'t be used with option "[hmac]"'),
    ],
)
def test_usage_errors(args: list[str], message: str) -> None:
    result = CliRunner().invoke(command, args)
    assert result.exit_code == 1 and message in result.output


def test_table_is_kafkas_printf_layout() -> None:
    lines: list[str] = []
    token = TokenDescription(
        "tok", b"\x01\x02", "User:alice", "User:alice", ("User:bob",), 0, 60_000, 120_000
    )
    print_tokens([token], lines.append)
    text = "".join(lines)
    header, row = text.split("\n")[1], text.split("\n")[3]
    assert header.split() == [
        "TOKENID",
        "HMAC",
        "OWNER",
        "REQUESTER",
        "RENEWERS",
        "ISSUEDATE",
        "EXPIRYDATE",
        "MAXDATE",
    ]
    assert row.startswith(
        "tok             AQI=                           User:alice      User:alice      [User:bob]"
    )
    assert text.startswith("\n") and text.endswith("\n")


def test_kafkapy_acls_names_delegation_token_resources() -> None:
    from kafkapy.server.security.acl import (
        AclEntry,
        Operation,
        PatternType,
        Permission,
        ResourcePattern,
        ResourceType,
    )
    from kafkapy.tools.acls import Options

    opts = Options((), (), False, (), "literal", ("User:carol",), (), (), (), ("Describe",), False, False, False,
                   ("tok1",))  # fmt: skip
    pattern = ResourcePattern(ResourceType.DELEGATION_TOKEN, "tok1", PatternType.LITERAL)
    assert opts.requested_acls() == {
        pattern: [AclEntry("User:carol", "*", Operation.DESCRIBE, Permission.ALLOW)]
    }
    assert [(f.resource_type, f.name) for f in opts.filters()] == [(ResourceType.DELEGATION_TOKEN, "tok1")]
