"""Broker logging in Kafka's layout and line format.

Files in LOG_DIR (env var; default <project>/logs for a source checkout, else <cwd>/logs, as
kafka-run-class.sh defaults to <install>/logs), as Kafka's config/log4j.properties lays them
out:
  server.log         everything (root logger), INFO
  controller.log     logger "kafkapy.controller"; also in server.log (Kafka keeps it out of
                     server.log with additivity=false; we keep it in so one file tells the
                     whole story of a single-broker cluster)
  state-change.log   logger "state.change.logger", only there (one line per partition change)
  kafka-request.log  logger "kafka.request.logger", WARN, only there (DEBUG: one "Completed
                     request:" line per request; TRACE: with the request's contents)
  log-cleaner.log    logger "kafkapy.log.LogCleaner", only there
plus stdout (which -daemon redirects to kafkaServer.out). Files roll every hour to
<name>.YYYY-MM-DD-HH like Kafka's DailyRollingFileAppender.

Kafka's config/log4j.properties is kafkapy's config/logging.yaml (logging_config.py): levels per
logger (TRACE included) and how many rolled files to keep, and for how long; rolled files past
either bound are deleted at each roll. Read from $KAFKAPY_LOG_CONFIG, else logging.yaml beside
server.properties (Kafka's KAFKA_LOG4J_OPTS / -Dlog4j.configuration equivalent).
Line format: `[2024-01-01 12:00:00,123] INFO message (logger.name)`.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from kafkapy.tools.logging_config import LoggingConfig, Retention

LOG_FORMAT = "[%(asctime)s] %(levelname)s %(message)s (%(name)s)"
_HOUR = 3600


@dataclass(frozen=True, slots=True)
class LogFile:
    logger: str  # "" is the root logger
    file_name: str
    level: int
    propagate: bool


LOG_FILES = (
    LogFile("", "server.log", logging.INFO, True),
    LogFile("kafkapy.controller", "controller.log", logging.INFO, True),
    LogFile("state.change.logger", "state-change.log", logging.INFO, False),
    LogFile("kafka.request.logger", "kafka-request.log", logging.WARNING, False),
    LogFile("kafkapy.log.LogCleaner", "log-cleaner.log", logging.INFO, False),
)


class KafkaFormatter(logging.Formatter):
    """log4j's level names (WARN, FATAL) in Kafka's pattern `[%d] %p %m (%c)%n`."""

    _LEVELS = {"WARNING": "WARN", "CRITICAL": "FATAL"}

    def __init__(self) -> None:
        # Python's default asctime is already log4j's ISO8601: 2024-01-01 12:00:00,123.
        super().__init__(LOG_FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        # A line goes to two handlers (its file and stdout) with this one formatter: formatted
        # once, for both.
        done: tuple[KafkaFormatter, str] | None = getattr(record, "_kafkapy_line", None)
        if done is not None and done[0] is self:
            return done[1]
        original = record.levelname
        record.levelname = self._LEVELS.get(original, original)
        try:
            line = super().format(record)
        finally:
            record.levelname = original
        record._kafkapy_line = (self, line)
        return line


_ROLLED_SUFFIX = re.compile(r"^\d{4}-\d{2}-\d{2}-\d{2}$")


class HourlyRollingFileHandler(logging.handlers.TimedRotatingFileHandler):
    """Rolls at the top of each hour to <file>.YYYY-MM-DD-HH; after each roll, deletes the rolled
    files beyond `retention` (the most kept, the oldest age), oldest first."""

    def __init__(self, filename: str | os.PathLike[str], retention: Retention | None = None) -> None:
        super().__init__(filename, when="H", interval=1, backupCount=0, encoding="utf-8", delay=False)
        self.suffix = "%Y-%m-%d-%H"
        self.retention = retention or Retention()

    def computeRollover(self, currentTime: int) -> int:  # noqa: N802 - overrides the stdlib name
        # The stdlib rolls an hour after start-up; log4j rolls on the hour.
        return (int(currentTime) // _HOUR + 1) * _HOUR

    def doRollover(self) -> None:  # noqa: N802 - overrides the stdlib name
        super().doRollover()
        self.delete_expired()

    def rolled_files(self) -> list[Path]:
        """This log's rolled files, oldest first (their suffix sorts by time)."""
        base = Path(self.baseFilename)
        prefix = base.name + "."
        return sorted(
            p for p in base.parent.glob(prefix + "*") if _ROLLED_SUFFIX.match(p.name[len(prefix) :])
        )

    def delete_expired(self, now: float | None = None) -> list[Path]:
        """Delete rolled files past the count or the age bound; returns what was deleted."""
        rolled = self.rolled_files()
        doomed: list[Path] = []
        keep = self.retention.max_rolled_files
        if keep >= 0 and len(rolled) > keep:
            doomed = rolled[: len(rolled) - keep]
        max_age_s = self.retention.max_age_hours * _HOUR
        if max_age_s >= 0:
            now = time.time() if now is None else now
            for p in rolled[len(doomed) :]:
                try:
                    if now - p.stat().st_mtime > max_age_s:
                        doomed.append(p)
                except FileNotFoundError:
                    continue
        for p in doomed:
            try:
                p.unlink()
            except FileNotFoundError:
                pass
        return doomed


def project_root() -> Path | None:
    """The source checkout kafkapy runs from, if any (its pyproject.toml names kafkapy)."""
    root = Path(__file__).resolve().parents[2]
    pyproject = root / "pyproject.toml"
    if pyproject.is_file() and 'name = "kafkapy"' in pyproject.read_text(errors="replace"):
        return root
    return None


def default_log_dir() -> Path:
    env = os.environ.get("LOG_DIR")
    if env:
        return Path(env).expanduser().absolute()
    return (project_root() or Path.cwd()) / "logs"


def setup_logging(
    log_dir: str | os.PathLike[str] | None = None,
    *,
    console: bool = True,
    level: int = logging.INFO,
    config: LoggingConfig | None = None,
) -> Path:
    """Installs Kafka's log files (and stdout); safe to call again (replaces what it installed).
    `config` (config/logging.yaml) sets per-logger levels and the rolled files' retention."""
    directory = Path(log_dir).absolute() if log_dir is not None else default_log_dir()
    directory.mkdir(parents=True, exist_ok=True)
    # LOG_FORMAT names no caller, thread or process: not looking them up for each record (the
    # logging HOWTO's "Optimization") takes a third off a line's cost, which counts where a
    # broker logs a line per partition (10k producer snapshots at a clean shutdown, as Kafka).
    logging._srcfile = None  # documented there, though private
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    formatter = KafkaFormatter()
    retention = config.retention if config is not None else Retention()
    for spec in LOG_FILES:
        logger = logging.getLogger(spec.logger or None)
        _remove_ours(logger)
        handler = HourlyRollingFileHandler(directory / spec.file_name, retention)
        handler.setFormatter(formatter)
        handler._kafkapy = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
        logger.setLevel(level if spec.logger == "" else max(spec.level, level))
        logger.propagate = spec.propagate
        handler.delete_expired()  # what a previous run left past the bounds
    if config is not None:
        for name, logger_level in config.levels.items():
            logging.getLogger(name or None).setLevel(logger_level)
    if console:
        stream = logging.StreamHandler(sys.stdout)
        stream.setFormatter(formatter)
        stream._kafkapy = True  # type: ignore[attr-defined]
        logging.getLogger().addHandler(stream)
    return directory


def _remove_ours(logger: logging.Logger) -> None:
    for handler in list(logger.handlers):
        if getattr(handler, "_kafkapy", False):
            logger.removeHandler(handler)
            handler.close()
