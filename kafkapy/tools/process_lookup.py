"""Finding kafkapy's broker and ZooKeeper processes by command line, as Kafka's stop scripts do.

Kafka's kafka-server-stop.sh / zookeeper-server-stop.sh grep `ps ax` for the main class and
signal every match. We match more narrowly, so that stopping the development servers never
hits someone else's ZooKeeper: a broker is a Python process running kafkapy-server-start
(or `-m kafkapy.tools.server_start`); a ZooKeeper is a QuorumPeerMain JVM that
kafkapy-zookeeper-server-start marked with `-Dkafkapy.zookeeper.owner=zookeeper-server-start`
(ZooKeepers that tests or brokers embed carry other owners and are left alone).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import click

from kafkapy.zkserver.launcher import MAIN_CLASS, OWNER_PROPERTY, PROPERTIES_PROPERTY

BROKER_SCRIPT = "kafkapy-server-start"
BROKER_MODULE = "kafkapy.tools.server_start"
ZOOKEEPER_OWNER = "zookeeper-server-start"


@dataclass(frozen=True, slots=True)
class ProcessInfo:
    pid: int
    argv: tuple[str, ...]
    cwd: Path | None


def list_processes() -> Iterator[ProcessInfo]:
    proc = Path("/proc")
    if not proc.is_dir():
        yield from _ps_processes()
        return
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "cmdline").read_bytes()
            cwd: Path | None = Path(os.readlink(entry / "cwd"))
        except PermissionError:
            cwd = None
        except OSError:  # the process went away meanwhile
            continue
        if raw:
            yield ProcessInfo(
                int(entry.name),
                tuple(a.decode(errors="replace") for a in raw.rstrip(b"\0").split(b"\0")),
                cwd,
            )


def _ps_processes() -> Iterator[ProcessInfo]:
    # No /proc (macOS): `ps` loses argument boundaries, which is good enough for matching.
    out = subprocess.run(
        ["ps", "ax", "-o", "pid=,command="], capture_output=True, text=True, check=False
    ).stdout
    for line in out.splitlines():
        pid, _, command = line.strip().partition(" ")
        if pid.isdigit():
            yield ProcessInfo(int(pid), tuple(command.split()), None)


def find_brokers(config_path: str | os.PathLike[str] | None = None) -> list[ProcessInfo]:
    """kafkapy brokers, optionally only those started with this server.properties file."""
    target = Path(config_path).resolve() if config_path is not None else None
    found = []
    for info in list_processes():
        args = _broker_args(info.argv)
        if args is None or info.pid == os.getpid():
            continue
        if target is not None and _config_argument(args, info.cwd) != target:
            continue
        found.append(info)
    return found


def find_zookeepers(config_path: str | os.PathLike[str] | None = None) -> list[ProcessInfo]:
    """ZooKeepers started by kafkapy-zookeeper-server-start, optionally from this properties file."""
    owner = f"-D{OWNER_PROPERTY}={ZOOKEEPER_OWNER}"
    wanted = f"-D{PROPERTIES_PROPERTY}={Path(config_path).resolve()}" if config_path is not None else None
    return [
        info
        for info in list_processes()
        if MAIN_CLASS in info.argv and owner in info.argv and (wanted is None or wanted in info.argv)
    ]


def signal_processes(processes: Iterable[ProcessInfo], sig: int = signal.SIGTERM) -> list[int]:
    signalled = []
    for info in processes:
        try:
            os.kill(info.pid, sig)
            signalled.append(info.pid)
        except ProcessLookupError:
            pass
    return signalled


def wait_for_exit(pids: Iterable[int], timeout: float) -> list[int]:
    """Waits until the processes are gone; returns those still alive at the timeout."""
    deadline = time.monotonic() + timeout
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [pid for pid in alive if _alive(pid)]
    return alive


def signal_from_env(default: str = "TERM") -> int:
    """Kafka's stop scripts take the signal from $SIGNAL (e.g. SIGNAL=KILL)."""
    name = os.environ.get("SIGNAL", default).upper()
    name = name if name.startswith("SIG") else "SIG" + name
    try:
        return int(signal.Signals[name])
    except KeyError:
        raise ValueError(f"Unknown signal {os.environ.get('SIGNAL')!r}") from None


def _broker_args(argv: tuple[str, ...]) -> tuple[str, ...] | None:
    """The arguments after the broker's program name, or None if this is not a broker."""
    if len(argv) < 2 or not Path(argv[0]).name.startswith("python"):
        return None
    if Path(argv[1]).name == BROKER_SCRIPT:
        return argv[2:]
    if argv[1:3] == ("-m", BROKER_MODULE):
        return argv[3:]
    return None


def _config_argument(args: tuple[str, ...], cwd: Path | None) -> Path | None:
    skip_next = False
    for arg in args:
        if skip_next:
            skip_next = False
        elif arg == "--override":
            skip_next = True
        elif not arg.startswith("-"):
            path = Path(arg)
            if not path.is_absolute() and cwd is not None:
                path = cwd / path
            return path.resolve()
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (exited, not yet reaped by its parent) counts as gone.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return True


def stop_command(
    find: Callable[[Path | None], list[ProcessInfo]], what: str, none_message: str, help_text: str
) -> click.Command:
    """A Kafka-style stop command: signal the processes `find` returns for an optional config."""

    @click.command(context_settings={"help_option_names": ["-h", "--help"]}, help=help_text)
    @click.option(
        "--wait", "wait_seconds", type=float, default=0.0, help="Wait up to this many seconds for the exit."
    )
    @click.argument("config", required=False, type=click.Path(dir_okay=False, path_type=Path))
    def command(wait_seconds: float, config: Path | None) -> None:
        try:
            sig = signal_from_env()
        except ValueError as e:
            click.echo(str(e), err=True)
            sys.exit(1)
        pids = signal_processes(find(config), sig)
        if not pids:
            click.echo(none_message)
            sys.exit(1)
        if wait_seconds > 0 and wait_for_exit(pids, wait_seconds):
            click.echo(f"{what} still running after {wait_seconds}s", err=True)
            sys.exit(1)

    return command
