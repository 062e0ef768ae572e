"""How every kafkapy tool runs its click command and ends, as Kafka's CommandLineUtils does.

Usage errors (an unknown option, a missing value) print one line on stderr and exit 1, like
the tools' own usage checks. Tools that Kafka runs with no arguments print their purpose and
usage on stderr and exit 1 too.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import NoReturn

import click


def run_command(
    command: click.Command,
    prog_name: str,
    argv: Sequence[str] | None = None,
    *,
    usage_if_no_args: bool = False,
    purpose: str | None = None,
) -> NoReturn:
    """Run `command` on `argv` (default: sys.argv[1:]) and exit with its code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args and usage_if_no_args:
        with click.Context(command, info_name=prog_name) as ctx:
            if purpose:
                click.echo(purpose, err=True)
            click.echo(command.get_help(ctx), err=True)
        sys.exit(1)
    try:
        code = command.main(args, prog_name=prog_name, standalone_mode=False)
    except click.ClickException as e:
        click.echo(e.format_message(), err=True)
        sys.exit(1)
    except click.Abort:
        sys.exit(1)
    sys.exit(code or 0)
