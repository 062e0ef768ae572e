"""kafkapy-zookeeper-server-stop [config/zookeeper.properties]

Like Kafka's zookeeper-server-stop.sh: signals (SIGTERM, or $SIGNAL) every ZooKeeper that
kafkapy-zookeeper-server-start started, found by command line; "No zookeeper server to stop"
and exit code 1 when there is none. Given a properties file, only the ZooKeeper started from
that file is stopped (a kafkapy addition).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kafkapy.tools.process_lookup import find_zookeepers, signal_from_env, signal_processes, wait_for_exit


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--wait", "wait_seconds", type=float, default=0.0, help="Wait up to this many seconds for the exit."
)
@click.argument("config", required=False, type=click.Path(dir_okay=False, path_type=Path))
def main(wait_seconds: float, config: Path | None) -> None:
    """Stop the ZooKeeper(s) started by kafkapy-zookeeper-server-start."""
    try:
        sig = signal_from_env()
    except ValueError as e:
        click.echo(str(e), err=True)
        sys.exit(1)
    pids = signal_processes(find_zookeepers(config), sig)
    if not pids:
        click.echo("No zookeeper server to stop")
        sys.exit(1)
    if wait_seconds > 0 and wait_for_exit(pids, wait_seconds):
        click.echo(f"ZooKeeper still running after {wait_seconds}s", err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
