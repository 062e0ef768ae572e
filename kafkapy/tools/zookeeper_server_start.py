"""kafkapy-zookeeper-server-start [-daemon] config/zookeeper.properties

Runs the real Apache ZooKeeper with the settings of a zookeeper.properties file, like Kafka's
zookeeper-server-start.sh: in the foreground until SIGTERM/SIGINT (ZooKeeper's log on stdout
and in $LOG_DIR/zookeeper.log), or with -daemon in the background (stdout to
$LOG_DIR/zookeeper.out), returning once ZooKeeper answers.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from types import FrameType

import click

from kafkapy.common.properties import PropertiesError, load_file
from kafkapy.tools.logging_setup import default_log_dir
from kafkapy.tools.process_lookup import ZOOKEEPER_OWNER
from kafkapy.zkserver.launcher import (
    PROPERTIES_PROPERTY,
    ZooKeeperNotFoundError,
    ZooKeeperProcess,
    ZooKeeperStartError,
)

PROG = "kafkapy-zookeeper-server-start"


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "-daemon", "daemon", is_flag=True, help="Run in the background; stdout goes to $LOG_DIR/zookeeper.out."
)
@click.option(
    "--wait-timeout", default=60.0, show_default=True, help="Seconds to wait for ZooKeeper to answer."
)
@click.argument("config", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def main(daemon: bool, wait_timeout: float, config: Path) -> None:
    """Start Apache ZooKeeper with the settings of CONFIG (a zookeeper.properties file)."""
    try:
        props = load_file(config)
    except PropertiesError as e:
        _fail(f"{config}: {e}")
    log_dir = default_log_dir()
    try:
        zk = ZooKeeperProcess(
            props,
            log_dir,
            console=not daemon,
            detach=daemon,
            owner=ZOOKEEPER_OWNER,
            extra_jvm_props={PROPERTIES_PROPERTY: str(config.resolve())},
        )
    except ValueError as e:
        _fail(f"{config}: {e}")
    try:
        zk.start(wait_timeout)
    except (ZooKeeperNotFoundError, ZooKeeperStartError) as e:
        _fail(str(e))
    if daemon:
        click.echo(
            f"ZooKeeper started in the background (pid {zk.pid}) on {zk.connect_string} in {zk.start_seconds:.1f}s; "
            f"logs in {log_dir}"
        )
        return
    sys.exit(_run_foreground(zk))


def _run_foreground(zk: ZooKeeperProcess) -> int:
    signals_seen = 0

    def on_signal(signum: int, frame: FrameType | None) -> None:
        # Only signal here: Popen.wait is in progress in the main thread and must not be re-entered.
        nonlocal signals_seen
        signals_seen += 1
        pid = zk.pid
        if pid is not None:
            os.kill(pid, signal.SIGTERM if signals_seen == 1 else signal.SIGKILL)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    code = zk.wait()
    zk.stop()
    # Stopped on request is a clean exit; otherwise pass ZooKeeper's exit code on.
    return 0 if signals_seen else code


def _fail(message: str) -> None:
    click.echo(f"{PROG}: {message}", err=True)
    sys.exit(1)


if __name__ == "__main__":
    main()
