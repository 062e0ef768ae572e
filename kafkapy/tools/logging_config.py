"""config/logging.yaml: kafkapy's counterpart of Kafka's config/log4j.properties.

    # log4j.rootLogger=INFO, stdout, kafkaAppender
    root: INFO
    # log4j.logger.<name>=<LEVEL>: TRACE, DEBUG, INFO, WARN, ERROR, FATAL (or OFF)
    loggers:
      kafka.request.logger: WARN       # DEBUG: one line per request; TRACE: with its contents
      kafkapy.controller: INFO
      state.change.logger: INFO
    # Rolled files (<log>.YYYY-MM-DD-HH) kept per log; older or extra ones are deleted at each
    # roll and at start-up. -1 turns a bound off.
    retention:
      max.rolled.files: 168
      max.age.hours: 168

Where it is read from: $KAFKAPY_LOG_CONFIG, else `logging.yaml` beside the server.properties
the broker starts with (Kafka reads $KAFKA_LOG4J_OPTS, else config/log4j.properties).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ENV_VAR = "KAFKAPY_LOG_CONFIG"
FILE_NAME = "logging.yaml"

# log4j's TRACE, below Python's DEBUG (Kafka's request logger and others use it).
TRACE = 5
logging.addLevelName(TRACE, "TRACE")

_LEVELS = {
    "TRACE": TRACE,
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "WARNING": logging.WARNING,
    "ERROR": logging.ERROR,
    "FATAL": logging.CRITICAL,
    "OFF": logging.CRITICAL + 10,
}


class LoggingConfigError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Retention:
    # One week of hourly files, per log, by default.
    max_rolled_files: int = 168
    max_age_hours: float = 168.0


@dataclass(frozen=True, slots=True)
class LoggingConfig:
    levels: dict[str, int] = field(default_factory=dict)  # "" is the root logger
    retention: Retention = field(default_factory=Retention)


def parse_level(value: object, where: str) -> int:
    level = _LEVELS.get(str(value).strip().upper())
    if level is None:
        raise LoggingConfigError(f"{where}: unknown level {value!r} (one of {', '.join(_LEVELS)})")
    return level


def parse(text: str, source: str = "logging config") -> LoggingConfig:
    data = yaml.safe_load(text) or {}
    if not isinstance(data, dict):
        raise LoggingConfigError(f"{source}: expected a mapping at the top level")
    levels: dict[str, int] = {}
    if "root" in data:
        levels[""] = parse_level(data["root"], f"{source}: root")
    loggers = data.get("loggers") or {}
    if not isinstance(loggers, dict):
        raise LoggingConfigError(f"{source}: 'loggers' must map logger names to levels")
    for name, level in loggers.items():
        levels[str(name)] = parse_level(level, f"{source}: loggers.{name}")
    raw = data.get("retention") or {}
    if not isinstance(raw, dict):
        raise LoggingConfigError(f"{source}: 'retention' must be a mapping")
    defaults = Retention()
    try:
        retention = Retention(
            int(raw.get("max.rolled.files", defaults.max_rolled_files)),
            float(raw.get("max.age.hours", defaults.max_age_hours)),
        )
    except (TypeError, ValueError) as e:
        raise LoggingConfigError(f"{source}: retention: {e}") from e
    return LoggingConfig(levels, retention)


def config_path(server_properties: Path | None) -> Path | None:
    """$KAFKAPY_LOG_CONFIG, else logging.yaml beside server.properties, if it exists."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    if server_properties is not None:
        beside = server_properties.parent / FILE_NAME
        if beside.is_file():
            return beside
    return None


def load(server_properties: Path | None) -> LoggingConfig | None:
    path = config_path(server_properties)
    if path is None:
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise LoggingConfigError(f"Cannot read the logging config {path}: {e}") from e
    return parse(text, str(path))
