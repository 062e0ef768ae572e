"""kafkapy-delegation-tokens: Kafka's kafka-delegation-tokens.sh (DelegationTokenCommand), KIP-48.

    kafkapy-delegation-tokens --bootstrap-server h:p --command-config client.properties \\
        --create --max-life-time-period -1 [--renewer-principal User:bob ...] [--owner-principal User:x]
        --renew  --renew-time-period -1 --hmac <base64>
        --expire --expiry-time-period -1 --hmac <base64>
        --describe [--owner-principal User:alice ...]

`--command-config` must authenticate (SASL or TLS with a client certificate): brokers refuse
token requests on PLAINTEXT. Output lines are DelegationTokenCommand's, dates in local time as
`yyyy-MM-dd'T'HH:mm`.
"""

from __future__ import annotations

import base64
import sys
import time
from collections.abc import Callable, Sequence

import click

from kafkapy.client.delegation_tokens import (
    TokenDescription,
    create_token,
    describe_tokens,
    expire_token,
    renew_token,
)
from kafkapy.tools.command_line import run_command

_CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 110}
_PURPOSE = "This tool helps to create, renew, expire, or describe delegation tokens."
_ROW = "%-15s %-30s %-15s %-15s %-25s %-15s %-15s %-15s"


class UsageError(Exception):
    pass


def _date(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M", time.localtime(ms / 1000))


def _java_list(items: Sequence[str]) -> str:
    return "[" + ", ".join(items) + "]"


def print_tokens(tokens: Sequence[TokenDescription], out: Callable[[str], None]) -> None:
    out(
        "\n"
        + _ROW % ("TOKENID", "HMAC", "OWNER", "REQUESTER", "RENEWERS", "ISSUEDATE", "EXPIRYDATE", "MAXDATE")
        + "\n"
    )
    for t in tokens:
        out(
            "\n"
            + _ROW
            % (
                t.token_id, t.hmac_base64, t.owner, t.requester, _java_list(t.renewers),
                _date(t.issue_timestamp), _date(t.expiry_timestamp), _date(t.max_timestamp),
            )
            + "\n"
        )  # fmt: skip


def check_args(
    actions: dict[str, bool], bootstrap: str | None, command_config: str | None, given: dict[str, bool]
) -> str:
    """DelegationTokenCommandOptions' checks; the action."""
    chosen = [a for a, on in actions.items() if on]
    if len(chosen) != 1:
        raise UsageError("Command must include exactly one action: --create, --renew, --expire or --describe")
    for name, value in (("bootstrap-server", bootstrap), ("command-config", command_config)):
        if value is None:
            raise UsageError(f'Missing required argument "[{name}]"')
    action = chosen[0]
    required = {
        "create": ("max-life-time-period",),
        "renew": ("hmac", "renew-time-period"),
        "expire": ("hmac", "expiry-time-period"),
        "describe": (),
    }[action]
    for name in required:
        if not given[name]:
            raise UsageError(f'Missing required argument "[{name}]"')
    invalid = {
        "create": ("hmac", "renew-time-period", "expiry-time-period"),
        "renew": ("renewer-principal", "max-life-time-period", "expiry-time-period", "owner-principal"),
        "expire": ("max-life-time-period", "renew-time-period", "owner-principal"),
        "describe": ("renew-time-period", "max-life-time-period", "hmac", "expiry-time-period"),
    }[action]
    for name in invalid:
        if given[name]:
            raise UsageError(f'Option "[{action}]" can\'t be used with option "[{name}]"')
    return action


@click.command(context_settings=_CONTEXT, help=_PURPOSE)
@click.option(
    "--bootstrap-server", metavar="server to connect to", help="REQUIRED: server(s) to use for bootstrapping."
)
@click.option(
    "--command-config",
    metavar="command config property file",
    help="REQUIRED: A property file containing configs to be passed to Admin Client. Token management"
    " operations are allowed in secure mode only. This config file is used to pass security related configs.",
)
@click.option(
    "--create",
    "do_create",
    is_flag=True,
    help="Create a new delegation token. Use --renewer-principal option to pass renewer principals.",
)
@click.option(
    "--renew",
    "do_renew",
    is_flag=True,
    help="Renew delegation token. Use --renew-time-period option to set renew time period.",
)
@click.option(
    "--expire",
    "do_expire",
    is_flag=True,
    help="Expire delegation token. Use --expiry-time-period option to expire the token.",
)
@click.option(
    "--describe",
    "do_describe",
    is_flag=True,
    help="Describe delegation tokens for the given principals. Use --owner-principal to pass owner/renewer"
    " principals. If --owner-principal option is not supplied, all the user owned tokens and tokens"
    " where user have Describe permission will be returned.",
)
@click.option(
    "--owner-principal",
    multiple=True,
    metavar="principalType:name",
    help="owner is a Kafka principal. They should be in principalType:name format.",
)
@click.option(
    "--renewer-principal",
    multiple=True,
    metavar="principalType:name",
    help="renewer is a Kafka principal. They should be in principalType:name format.",
)
@click.option(
    "--max-life-time-period",
    type=int,
    metavar="Long",
    help="Max life period for the token in milliseconds. If the value is -1, then token max life time"
    " will default to the server side config value of (delegation.token.max.lifetime.ms).",
)
@click.option(
    "--renew-time-period",
    type=int,
    metavar="Long",
    help="Renew time period in milliseconds. If the value is -1, then the renew time period will default"
    " to the server side config value of (delegation.token.expiry.time.ms).",
)
@click.option(
    "--expiry-time-period",
    type=int,
    metavar="Long",
    help="Expiry time period in milliseconds. If the value is -1, then the token will get invalidated immediately.",
)
@click.option("--hmac", metavar="String", help="HMAC of the delegation token")
def command(
    bootstrap_server: str | None, command_config: str | None, do_create: bool, do_renew: bool, do_expire: bool,
    do_describe: bool, owner_principal: tuple[str, ...], renewer_principal: tuple[str, ...],
    max_life_time_period: int | None, renew_time_period: int | None, expiry_time_period: int | None,
    hmac: str | None,
) -> None:  # fmt: skip
    given = {
        "owner-principal": bool(owner_principal), "renewer-principal": bool(renewer_principal),
        "max-life-time-period": max_life_time_period is not None, "renew-time-period": renew_time_period is not None,
        "expiry-time-period": expiry_time_period is not None, "hmac": hmac is not None,
    }  # fmt: skip
    try:
        action = check_args(
            {"create": do_create, "renew": do_renew, "expire": do_expire, "describe": do_describe},
            bootstrap_server, command_config, given,
        )  # fmt: skip
    except UsageError as e:
        click.echo(str(e), err=True)
        sys.exit(1)
    from kafkapy.client.admin import AdminClient
    from kafkapy.client.client_security import client_security, connector
    from kafkapy.common.properties import load_file

    assert bootstrap_server is not None and command_config is not None
    admin: AdminClient | None = None
    out = lambda text: click.echo(text, nl=False)  # noqa: E731 - Kafka prints with printf
    try:
        admin = AdminClient(
            bootstrap_server,
            connector=connector(client_security(load_file(command_config)), "kafkapy-delegation-tokens"),
        )
        if action == "create":
            renewers = [r.strip() for r in renewer_principal]
            click.echo(
                f"Calling create token operation with renewers :{_java_list(renewers)} ,"
                f" max-life-time-period :{max_life_time_period}"
            )
            token = create_token(
                admin,
                renewers,
                int(max_life_time_period or -1),
                owner_principal[0] if owner_principal else None,
            )
            click.echo(f"Created delegation token with tokenId : {token.token_id}")
            print_tokens([token], out)
        elif action in ("renew", "expire"):
            assert hmac is not None
            period = renew_time_period if action == "renew" else expiry_time_period
            label = "renew-time-period" if action == "renew" else "expire-time-period"
            click.echo(f"Calling {action} token operation with hmac :{hmac} , {label} :{period}")
            fn = renew_token if action == "renew" else expire_token
            expiry = fn(admin, base64.b64decode(hmac), int(period if period is not None else -1))
            out(f"Completed {action} operation. New expiry date : {_date(expiry)}")
        else:
            owners = [o.strip() for o in owner_principal]
            if owners:
                click.echo(f"Calling describe token operation for owners: {_java_list(owners)}")
            else:
                click.echo("Calling describe token operation for current user.")
            tokens = describe_tokens(admin, owners or None)
            out(f"Total number of tokens : {len(tokens)}")
            print_tokens(tokens, out)
    except Exception as e:  # noqa: BLE001 - DelegationTokenCommand prints the failure and exits 1
        click.echo(f"{getattr(e, 'message', None) or e or type(e).__name__}", err=True)
        sys.exit(1)
    finally:
        if admin is not None:
            admin.close()


def main(argv: Sequence[str] | None = None) -> None:
    run_command(command, "kafkapy-delegation-tokens", argv, usage_if_no_args=True, purpose=_PURPOSE)


if __name__ == "__main__":
    main()
