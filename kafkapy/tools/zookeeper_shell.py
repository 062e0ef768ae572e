"""kafkapy-zookeeper-shell: zookeeper-shell.sh (ZooKeeper 3.5's ZooKeeperMain, as Kafka 2.8 runs
it) over kazoo, for the commands an operator of a Kafka cluster uses.

    kafkapy-zookeeper-shell 127.0.0.1:2181 ls /brokers/ids          one command, then exit
    kafkapy-zookeeper-shell 127.0.0.1:2181[/chroot] < commands.txt   one command per line

Commands and their output, as ZooKeeperMain prints them: `ls path` ("[0, 1, 2]"), `get path`
(the data, "null" for none), `stat path` (cZxid = 0x.., ctime = ..., ...), `create [-s] [-e] path
[data]` ("Created /path"), `set path data`, `delete path`, `deleteall path` (and the deprecated
`rmr path`), `quit`. ZooKeeper's refusals go to stderr ("Node does not exist: /x", "Node already
exists: /x", "Node not empty: /x"); a command that failed makes the exit code 1 (ZooKeeper 3.5
exits 0). Without JLine (Kafka ships none) ZooKeeperMain reads stdin without a prompt: so does this.
"""

from __future__ import annotations

import logging
import shlex
import sys
import time
from collections.abc import Callable, Iterable, Sequence

import click
from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NoAuthError, NodeExistsError, NoNodeError, NotEmptyError
from kazoo.protocol.states import ZnodeStat

from kafkapy.tools.command_line import run_command
from kafkapy.zk.zk_auth import zk_credentials

CONNECT_TIMEOUT_S = 30.0
_CONTEXT = {
    "help_option_names": ["-h", "--help"],
    "ignore_unknown_options": True,
    "allow_interspersed_args": False,
}
USAGE = """ZooKeeper -server host:port cmd args
\tstat path
\tset path data [version]
\tls path
\tdelete path [version]
\tget path
\tcreate [-s] [-e] path data
\trmr path
\tdeleteall path
\tquit"""

Printer = Callable[[str], None]


class CommandFailed(Exception):
    """A command ZooKeeper refused; the message is ZooKeeperMain's line for it."""


def java_date(ms: int) -> str:
    """java.util.Date.toString: 'Mon Nov 23 20:42:25 UTC 2026' in the local time zone."""
    return time.strftime("%a %b %d %H:%M:%S %Z %Y", time.localtime(ms / 1000))


def stat_lines(stat: ZnodeStat) -> list[str]:
    """ZooKeeper's StatPrinter."""
    return [
        f"cZxid = 0x{stat.czxid:x}",
        f"ctime = {java_date(stat.ctime)}",
        f"mZxid = 0x{stat.mzxid:x}",
        f"mtime = {java_date(stat.mtime)}",
        f"pZxid = 0x{stat.pzxid:x}",
        f"cversion = {stat.cversion}",
        f"dataVersion = {stat.version}",
        f"aclVersion = {stat.aversion}",
        f"ephemeralOwner = 0x{stat.ephemeralOwner:x}",
        f"dataLength = {stat.dataLength}",
        f"numChildren = {stat.numChildren}",
    ]


class Shell:
    def __init__(self, zk: KazooClient, out: Printer, err: Printer) -> None:
        self.zk = zk
        self.out = out
        self.err = err

    def execute(self, words: list[str]) -> bool:
        """Run one command; False if it failed (a message is on stderr already)."""
        if not words:
            return True
        name, args = words[0], words[1:]
        handler: Callable[[list[str]], None] | None = getattr(self, f"cmd_{name}", None)
        if handler is None or not self._arity_ok(name, args):
            self.err(USAGE)
            return False
        try:
            handler(args)
        except NoNodeError:
            return self._fail(f"Node does not exist: {self._path(args)}")
        except NodeExistsError:
            return self._fail(f"Node already exists: {self._path(args)}")
        except NotEmptyError:
            return self._fail(f"Node not empty: {self._path(args)}")
        except BadVersionError:
            return self._fail(f"version No is not valid : {self._path(args)}")
        except NoAuthError:
            return self._fail(f"Insufficient permission : {self._path(args)}")
        except CommandFailed as e:
            return self._fail(str(e))
        return True

    _ARITY = {
        "ls": (1, 1),
        "get": (1, 1),
        "stat": (1, 1),
        "create": (1, 2),
        "set": (2, 3),
        "delete": (1, 2),
        "deleteall": (1, 1),
        "rmr": (1, 1),
    }

    def _arity_ok(self, name: str, args: list[str]) -> bool:
        low, high = self._ARITY[name]
        positional = (
            [a for a in args if a not in ("-s", "-e", "-w")] if name in ("create", "get", "ls") else args
        )
        return low <= len(positional) <= high

    @staticmethod
    def _path(args: list[str]) -> str:
        return next((a for a in args if a.startswith("/")), args[0] if args else "")

    def _fail(self, message: str) -> bool:
        self.err(message)
        return False

    @staticmethod
    def _check_path(path: str) -> str:
        if not path.startswith("/"):
            raise CommandFailed("Path must start with / character")
        return path

    def cmd_ls(self, args: list[str]) -> None:
        path = self._check_path([a for a in args if a != "-w"][0])
        self.out("[" + ", ".join(sorted(self.zk.get_children(path))) + "]")

    def cmd_get(self, args: list[str]) -> None:
        path = self._check_path([a for a in args if a not in ("-s", "-w")][0])
        data, stat = self.zk.get(path)
        self.out("null" if data is None else data.decode("utf-8", errors="replace"))
        if "-s" in args:
            for line in stat_lines(stat):
                self.out(line)

    def cmd_stat(self, args: list[str]) -> None:
        stat = self.zk.exists(self._check_path(args[0]))
        if stat is None:
            raise NoNodeError
        for line in stat_lines(stat):
            self.out(line)

    def cmd_create(self, args: list[str]) -> None:
        positional = [a for a in args if a not in ("-s", "-e")]
        path = self._check_path(positional[0])
        data = positional[1].encode() if len(positional) > 1 else b""
        created = self.zk.create(path, data, ephemeral="-e" in args, sequence="-s" in args)
        self.out(f"Created {created}")

    def cmd_set(self, args: list[str]) -> None:
        version = int(args[2]) if len(args) > 2 else -1
        self.zk.set(self._check_path(args[0]), args[1].encode(), version)

    def cmd_delete(self, args: list[str]) -> None:
        version = int(args[1]) if len(args) > 1 else -1
        self.zk.delete(self._check_path(args[0]), version)

    def cmd_deleteall(self, args: list[str]) -> None:
        self.zk.delete(self._check_path(args[0]), recursive=True)

    def cmd_rmr(self, args: list[str]) -> None:
        self.out("The command 'rmr' has been deprecated. Please use 'deleteall' instead.")
        self.cmd_deleteall(args)

    def run_lines(self, lines: Iterable[str]) -> bool:
        """Interactive mode: one command per line until `quit` or end of input."""
        ok = True
        for line in lines:
            words = shlex.split(line, posix=True) if line.strip() else []
            if words[:1] == ["quit"]:
                break
            ok = self.execute(words) and ok
        return ok


def connect(server: str) -> KazooClient:
    # Like ZooKeeperMain under Kafka's zookeeper-shell.sh: authenticated as the `Client` section
    # of the JAAS file KAFKA_OPTS names, if any. Its `create` still makes open znodes.
    credentials = zk_credentials()
    zk = KazooClient(
        hosts=server,
        timeout=CONNECT_TIMEOUT_S,
        auth_data=credentials.auth_data if credentials is not None else None,
    )
    zk.start(timeout=CONNECT_TIMEOUT_S)
    return zk


@click.command(
    context_settings=_CONTEXT, help="ZooKeeper shell: kafkapy-zookeeper-shell host:port[/chroot] [cmd args]"
)
@click.argument("server")
@click.argument("words", nargs=-1, type=click.UNPROCESSED)
def command(server: str, words: tuple[str, ...]) -> None:
    if not logging.getLogger().handlers:
        # kazoo logs connection trouble; without a handler Python would print it to stderr.
        logging.getLogger().addHandler(logging.NullHandler())
    if words[:1] == ("-zk-tls-config-file",):
        click.echo("Error: TLS to ZooKeeper is not supported by kafkapy", err=True)
        sys.exit(1)
    click.echo(f"Connecting to {server}")
    try:
        zk = connect(server)
    except Exception as e:  # noqa: BLE001 - kazoo's timeouts and bad host strings
        click.echo(f"Error: could not connect to {server}: {e or type(e).__name__}", err=True)
        sys.exit(1)
    interactive = not words
    if interactive:
        click.echo("Welcome to ZooKeeper!")
        click.echo("JLine support is disabled")
    click.echo("\nWATCHER::\n\nWatchedEvent state:SyncConnected type:None path:null")
    try:
        shell = Shell(zk, click.echo, lambda line: click.echo(line, err=True))
        ok = (
            shell.run_lines(sys.stdin)
            if interactive
            else (list(words) == ["quit"] or shell.execute(list(words)))
        )
    finally:
        zk.stop()
        zk.close()
    sys.exit(0 if ok else 1)


def main(argv: Sequence[str] | None = None) -> None:
    run_command(
        command,
        "kafkapy-zookeeper-shell",
        argv,
        usage_if_no_args=True,
        purpose="USAGE: kafkapy-zookeeper-shell zookeeper_host:port[/path] [args...]",
    )


if __name__ == "__main__":
    main()
