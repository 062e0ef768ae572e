"""ZooKeeperProcess: runs the real Apache ZooKeeper (QuorumPeerMain) as a child JVM.

From the settings of a zookeeper.properties file it writes a zoo.cfg (plus myid for an
ensemble member and a logging config) into a run directory, starts
`java -cp <zookeeper jars> org.apache.zookeeper.server.quorum.QuorumPeerMain zoo.cfg`, and
waits until the server answers `ruok` with `imok` (and, when standalone, reports a Mode in
`srvr`, i.e. it is serving). Files, for a ZooKeeperProcess with log_dir L and dataDir D:
  L/zookeeper.log   ZooKeeper's own log (log4j or logback, as the install provides)
  L/zookeeper.out   the JVM's stdout/stderr (startup failures land here)
  D/kafkapy/        zoo.cfg, log4j.properties, logback.xml, zookeeper_server.pid
(zkServer.sh keeps its pid file in dataDir too.)
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from kafkapy.common import properties
from kafkapy.server.config_endpoints import is_loopback_host
from kafkapy.zkserver.install import ZooKeeperInstall, ZooKeeperNotFoundError, find_zookeeper

__all__ = [
    "ZooKeeperNotFoundError",
    "ZooKeeperProcess",
    "ZooKeeperStartError",
    "find_zookeeper",
    "four_letter_word",
    "is_loopback_host",
    "is_zookeeper_reachable",
]

MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
# Marks our JVMs on their command line, so the stop command finds them (and only them).
OWNER_PROPERTY = "kafkapy.zookeeper.owner"
PROPERTIES_PROPERTY = "kafkapy.zookeeper.properties"
# zoo.cfg settings written unless the properties set them: zoo_sample.cfg's timing, no
# AdminServer (an HTTP server on 8080 that would clash), and the four-letter words we use.
ZOO_CFG_DEFAULTS = {
    "tickTime": "2000",
    "initLimit": "10",
    "syncLimit": "5",
    "admin.enableServer": "false",
    "4lw.commands.whitelist": "ruok,srvr,stat",
}
# A development/test ZooKeeper needs little: a small heap and the serial collector (one GC
# thread) keep it light on a 2-core machine. Measured: JIT flags made no startup difference.
DEFAULT_JVM_OPTS = ("-Xmx256m", "-XX:+UseSerialGC", "-Djava.awt.headless=true")
_LOG_PATTERN = "[%d{yyyy-MM-dd HH:mm:ss,SSS}] %p %m (%c)%n"


class ZooKeeperStartError(RuntimeError):
    """The JVM exited or did not answer in time; the message ends with the tail of its output."""


class ZooKeeperProcess:
    def __init__(
        self,
        props: Mapping[str, str],
        log_dir: str | os.PathLike[str],
        *,
        run_dir: str | os.PathLike[str] | None = None,
        install: ZooKeeperInstall | None = None,
        log_name: str = "zookeeper",
        console: bool = False,
        detach: bool = False,
        owner: str = "kafkapy",
        jvm_opts: Sequence[str] = DEFAULT_JVM_OPTS,
        extra_jvm_props: Mapping[str, str] | None = None,
    ) -> None:
        """`props` are zookeeper.properties settings; a kafkapy-only `myid` key names this
        member of an ensemble (server.N keys). `console` sends ZooKeeper's log to stdout too
        and leaves the JVM's stdout on ours; `detach` puts the JVM in its own session so it
        outlives us (kafkapy-zookeeper-server-start -daemon)."""
        self.props = {k: str(v) for k, v in props.items()}
        self.server_id = self.props.pop("myid", None)
        if "dataDir" not in self.props:
            raise ValueError("zookeeper properties need dataDir")
        if "clientPort" not in self.props:
            raise ValueError("zookeeper properties need clientPort")
        self.data_dir = Path(self.props["dataDir"]).expanduser().absolute()
        self.port = int(self.props["clientPort"])
        self.log_dir = Path(log_dir).expanduser().absolute()
        self.run_dir = Path(run_dir).absolute() if run_dir is not None else self.data_dir / "kafkapy"
        self.log_file = self.log_dir / f"{log_name}.log"
        self.out_file = self.log_dir / f"{log_name}.out"
        self.cfg_file = self.run_dir / "zoo.cfg"
        self.pid_file = self.run_dir / "zookeeper_server.pid"
        self._install = install
        self._console = console
        self._detach = detach
        self._owner = owner
        self._jvm_opts = tuple(jvm_opts)
        self._extra_jvm_props = dict(extra_jvm_props or {})
        self._proc: subprocess.Popen[bytes] | None = None
        self.start_seconds: float | None = None

    @classmethod
    def standalone(
        cls,
        port: int,
        data_dir: str | os.PathLike[str],
        log_dir: str | os.PathLike[str],
        host: str = "127.0.0.1",
        **kwargs: object,
    ) -> ZooKeeperProcess:
        """A single server bound to host:port: what tests and the embedded default want."""
        props = {
            "dataDir": str(data_dir),
            "clientPort": str(port),
            "clientPortAddress": host,
            "maxClientCnxns": "0",
        }
        return cls(props, log_dir, **kwargs)  # type: ignore[arg-type]

    # ---- addresses

    @property
    def host(self) -> str:
        """Where to reach the server from this machine."""
        address = self.props.get("clientPortAddress", "")
        return "127.0.0.1" if address in ("", "0.0.0.0", "::") else address

    @property
    def connect_string(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def is_ensemble(self) -> bool:
        return any(key.startswith("server.") for key in self.props)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    # ---- lifecycle

    def start(self, wait_timeout: float = 60.0) -> ZooKeeperProcess:
        if self.is_running():
            return self
        if _port_open(self.host, self.port, 0.5):
            raise ZooKeeperStartError(
                f"Cannot start ZooKeeper on {self.connect_string}: the port is already in use"
            )
        install = self._install or find_zookeeper()
        self._write_files(install)
        command = self.command(install)
        started = time.monotonic()
        out = None if self._console else open(self.out_file, "ab")  # noqa: SIM115 - the child owns it
        try:
            self._proc = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT if out else None,
                cwd=self.run_dir,
                start_new_session=self._detach,
            )
        finally:
            if out is not None:
                out.close()
        self.pid_file.write_text(f"{self._proc.pid}\n")
        try:
            self._wait_ready(started + wait_timeout)
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - started
        return self

    def wait(self, timeout: float | None = None) -> int:
        """Blocks until the JVM exits; returns its exit code."""
        if self._proc is None:
            raise RuntimeError("ZooKeeper was not started")
        return self._proc.wait(timeout)

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM (ZooKeeper shuts down cleanly), then SIGKILL after `timeout` seconds."""
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout)
        self.pid_file.unlink(missing_ok=True)
        return proc.returncode

    def restart(self, down_seconds: float = 0.0, wait_timeout: float = 60.0) -> ZooKeeperProcess:
        """Stop (SIGTERM), stay down `down_seconds`, start again on the same port and dataDir: the
        znodes and the sessions in its snapshot and transaction log come back with it."""
        self.stop()
        if down_seconds > 0:
            time.sleep(down_seconds)
        return self.start(wait_timeout)

    def __enter__(self) -> ZooKeeperProcess:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def wait_until_serving(self, timeout: float) -> None:
        """For ensembles: waits until this member has joined a quorum (srvr shows a Mode)."""
        deadline = time.monotonic() + timeout
        while not self._serving():
            if time.monotonic() > deadline:
                raise ZooKeeperStartError(
                    f"ZooKeeper on {self.connect_string} is not serving after {timeout}s"
                )
            self._check_alive()
            time.sleep(0.05)

    # ---- internals

    def command(self, install: ZooKeeperInstall) -> list[str]:
        # The run dir comes first on the classpath: log4j.properties / logback.xml there win.
        classpath = os.pathsep.join([str(self.run_dir), *install.classpath])
        jvm_props = {
            "zookeeper.log.dir": str(self.log_dir),
            "zookeeper.log.file": self.log_file.name,
            "zookeeper.jmx.log4j.disable": "true",
            OWNER_PROPERTY: self._owner,
            **self._extra_jvm_props,
        }
        return [
            install.java,
            *self._jvm_opts,
            *(f"-D{k}={v}" for k, v in jvm_props.items()),
            "-cp",
            classpath,
            MAIN_CLASS,
            str(self.cfg_file),
        ]

    def zoo_cfg(self) -> dict[str, str]:
        cfg = {**ZOO_CFG_DEFAULTS, **self.props, "dataDir": str(self.data_dir)}
        allowed = [w.strip() for w in cfg["4lw.commands.whitelist"].split(",") if w.strip()]
        if "*" not in allowed:
            # start() and is_zookeeper_reachable() rely on these two.
            allowed += [w for w in ("ruok", "srvr") if w not in allowed]
            cfg["4lw.commands.whitelist"] = ",".join(allowed)
        if "dataLogDir" in cfg:
            cfg["dataLogDir"] = str(Path(cfg["dataLogDir"]).expanduser().absolute())
        return cfg

    def _write_files(self, install: ZooKeeperInstall) -> None:
        for directory in (self.data_dir, self.run_dir, self.log_dir):
            directory.mkdir(parents=True, exist_ok=True)
        self.cfg_file.write_text(
            properties.dump(self.zoo_cfg(), header="Written by kafkapy; edit zookeeper.properties instead.")
        )
        if self.is_ensemble:
            myid_file = self.data_dir / "myid"
            if self.server_id is not None:
                myid_file.write_text(f"{self.server_id}\n")
            elif not myid_file.exists():
                raise ValueError(
                    f"ZooKeeper ensemble (server.N keys) needs myid=N in its properties or {myid_file}"
                )
        appenders = "FILE, CONSOLE" if self._console else "FILE"
        (self.run_dir / "log4j.properties").write_text(
            f"log4j.rootLogger=INFO, {appenders}\n"
            "log4j.appender.FILE=org.apache.log4j.RollingFileAppender\n"
            "log4j.appender.FILE.File=${zookeeper.log.dir}/${zookeeper.log.file}\n"
            "log4j.appender.FILE.MaxFileSize=10MB\n"
            "log4j.appender.FILE.MaxBackupIndex=10\n"
            "log4j.appender.FILE.layout=org.apache.log4j.PatternLayout\n"
            f"log4j.appender.FILE.layout.ConversionPattern={_LOG_PATTERN}\n"
            "log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender\n"
            "log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout\n"
            f"log4j.appender.CONSOLE.layout.ConversionPattern={_LOG_PATTERN}\n"
        )
        console = '<appender-ref ref="CONSOLE"/>' if self._console else ""
        pattern = _LOG_PATTERN.replace("%c", "%logger").replace("%p", "%level").replace("%m", "%msg")
        (self.run_dir / "logback.xml").write_text(
            "<configuration>\n"
            f'  <appender name="FILE" class="ch.qos.logback.core.FileAppender"><file>{self.log_file}</file>'
            f"<encoder><pattern>{pattern}</pattern></encoder></appender>\n"
            '  <appender name="CONSOLE" class="ch.qos.logback.core.ConsoleAppender">'
            f"<encoder><pattern>{pattern}</pattern></encoder></appender>\n"
            f'  <root level="INFO"><appender-ref ref="FILE"/>{console}</root>\n'
            "</configuration>\n"
        )

    def _wait_ready(self, deadline: float) -> None:
        while True:
            self._check_alive()
            if four_letter_word(self.host, self.port, "ruok", 0.5) == "imok" and (
                self.is_ensemble or self._serving()
            ):
                return
            if time.monotonic() > deadline:
                raise ZooKeeperStartError(
                    f"ZooKeeper on {self.connect_string} did not answer within the timeout{self._output_tail()}"
                )
            time.sleep(0.05)

    def _serving(self) -> bool:
        reply = four_letter_word(self.host, self.port, "srvr", 0.5) or ""
        return "Mode:" in reply

    def _check_alive(self) -> None:
        if self._proc is not None and self._proc.poll() is not None:
            code = self._proc.returncode
            raise ZooKeeperStartError(
                f"ZooKeeper exited with code {code} while starting{self._output_tail()}"
            )

    def _output_tail(self, lines: int = 15) -> str:
        tails = []
        for path in (self.out_file, self.log_file):
            if path.exists():
                text = path.read_text(errors="replace").splitlines()[-lines:]
                if text:
                    tails.append(f"--- last lines of {path}:\n" + "\n".join(text))
        return ("\n" + "\n".join(tails)) if tails else ""


def four_letter_word(host: str, port: int, command: str, timeout: float) -> str | None:
    """Sends a ZooKeeper four-letter command; returns the reply, or None if nothing answered."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            sock.sendall(command.encode("ascii"))
            sock.shutdown(socket.SHUT_WR)
            chunks = []
            while chunk := sock.recv(4096):
                chunks.append(chunk)
    except OSError:
        return None
    return b"".join(chunks).decode("utf-8", "replace") or None


def is_zookeeper_reachable(connect_string: str, timeout: float = 2.0) -> bool:
    """True if any server of `host:port[,host:port][/chroot]` answers a four-letter word.

    Any reply counts, including "ruok is not executed because it is not in the whitelist":
    the question is whether a ZooKeeper is there, not whether it allows ruok."""
    hosts = connect_string.split("/", 1)[0]
    servers = [s.strip() for s in hosts.split(",") if s.strip()]
    deadline = time.monotonic() + timeout
    for server in servers:
        host, port = _split_host_port(server)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        if four_letter_word(host, port, "ruok", min(remaining, max(timeout / len(servers), 0.2))):
            return True
    return False


def _split_host_port(server: str) -> tuple[str, int]:
    if server.startswith("["):
        host, _, rest = server[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") else 2181
    if server.count(":") == 1:
        host, port = server.split(":")
        return host, int(port)
    return server, 2181


def _port_open(host: str, port: int, timeout: float) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False
