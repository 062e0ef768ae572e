"""kafkapy-server-start [-daemon] config/server.properties [--override key=value ...]

Kafka's kafka-server-start.sh: loads the broker configuration (a bad value is one line on
stderr naming the key, the value and what is allowed; exit code 1), sets up Kafka's log
files in $LOG_DIR, and runs the broker until SIGTERM/SIGINT. With -daemon the broker runs in
the background with its stdout in $LOG_DIR/kafkaServer.out.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import click

from kafkapy.common.properties import PropertiesError
from kafkapy.server.config import ConfigException, KafkaConfig
from kafkapy.tools.logging_config import LoggingConfigError
from kafkapy.tools.logging_config import load as load_logging_config
from kafkapy.tools.logging_setup import default_log_dir, setup_logging

PROG = "kafkapy-server-start"
log = logging.getLogger("kafkapy.Kafka")


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "-daemon", "daemon", is_flag=True, help="Run in the background; stdout goes to $LOG_DIR/kafkaServer.out."
)
@click.option(
    "--override",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a property of the file (repeatable).",
)
@click.argument("config_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def main(daemon: bool, overrides: tuple[str, ...], config_file: Path) -> None:
    """Start a kafkapy broker configured by CONFIG_FILE (a server.properties file)."""
    try:
        config = KafkaConfig.from_file(config_file, overrides)
    except (ConfigException, PropertiesError) as e:
        click.echo(f"{PROG}: {e}", err=True)
        sys.exit(1)
    try:
        # Kafka's log4j.properties: $KAFKAPY_LOG_CONFIG, else logging.yaml beside the config file.
        logging_config = load_logging_config(config_file)
    except LoggingConfigError as e:
        click.echo(f"{PROG}: {e}", err=True)
        sys.exit(1)
    if daemon:
        sys.exit(_start_daemon(config_file, overrides))
    setup_logging(default_log_dir(), console=True, config=logging_config)
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
    _raise_open_files_limit()
    for key in config.unknown_keys:
        log.warning("The configuration '%s' was supplied but isn't a known config.", key)
    log.info("%s", config.describe())
    from kafkapy.server.kafka_server import KafkaServer  # the heavy import, only once the config is good

    try:
        code = KafkaServer(config).run()
    except Exception:
        log.exception("Exiting Kafka due to fatal exception")
        code = 1
    logging.shutdown()
    sys.exit(code or 0)


# How long a thread may hold the GIL while another waits for it (CPython's default is 5 ms).
# A broker's replica fetcher threads block in recv and then need the GIL back while the event
# loop runs Python code (and the other way round); with 5 ms every acks=all produce waited
# several such hand-offs (leader sends the records, follower reads and appends them, its next
# fetch reports the offset). At 0.5 ms the follower fetch's send time for a 1 MB answer fell
# from a median 1-5 ms to 0.4-1 ms and the produce's remote time from 4-13 ms to 2-5 ms
# (docs/benchmarks.md, "Replicated produce"). The cost, a forced switch at most every 0.5 ms
# while two threads are runnable, is a few microseconds each.
GIL_SWITCH_INTERVAL_S = 0.0005


def _raise_open_files_limit() -> None:
    """Raise the soft limit on open files to the hard limit, as the JVM does for Kafka on Linux
    (-XX:+MaxFDLimit, on by default): every client connection, log segment (.log, .index,
    .timeindex) and ZooKeeper session is a descriptor, and the common soft default of 1024 is
    reached long before max.connections. Past the limit accept() fails with EMFILE: the
    Acceptor logs it and retries, but opening a new segment fails too, so set max.connections
    below this limit minus what the logs need."""
    try:
        import resource
    except ImportError:  # not a POSIX system: nothing to raise
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError) as e:
            log.warning("Could not raise the open files limit from %d to %d: %s", soft, hard, e)
    shown = "unlimited" if hard == resource.RLIM_INFINITY else str(hard)
    log.info("Open files limit (RLIMIT_NOFILE): soft %d, hard %s", soft, shown)


def _start_daemon(config_file: Path, overrides: tuple[str, ...]) -> int:
    log_dir = default_log_dir()
    log_dir.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "kafkapy.tools.server_start", str(config_file.resolve())]
    command += [f"--override={item}" for item in overrides]
    # The child writes its logs where this process would have: pin LOG_DIR for it.
    env = {**os.environ, "LOG_DIR": str(log_dir)}
    with open(log_dir / "kafkaServer.out", "ab") as out:
        child = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    click.echo(f"kafkapy server started in the background (pid {child.pid}); logs in {log_dir}")
    return 0


if __name__ == "__main__":
    main()
