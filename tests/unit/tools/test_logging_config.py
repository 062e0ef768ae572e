"""config/logging.yaml (Kafka's log4j.properties): per-logger levels, TRACE, rolled-log retention."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import pytest

from kafkapy.tools.logging_config import TRACE, LoggingConfigError, Retention, config_path, parse
from kafkapy.tools.logging_setup import HourlyRollingFileHandler, setup_logging

pytestmark = pytest.mark.timeout(30)

SHIPPED = Path(__file__).resolve().parents[3] / "config" / "logging.yaml"


def test_the_shipped_file_parses_with_kafka_s_defaults() -> None:
    config = parse(SHIPPED.read_text(), str(SHIPPED))
    assert config.levels[""] == logging.INFO
    assert config.levels["kafka.request.logger"] == logging.WARNING
    assert config.retention == Retention(168, 168.0)


def test_levels_take_log4j_names_and_trace() -> None:
    config = parse("root: warn\nloggers:\n  kafka.request.logger: TRACE\n  a.b: FATAL\n")
    assert config.levels == {"": logging.WARNING, "kafka.request.logger": TRACE, "a.b": logging.CRITICAL}
    with pytest.raises(LoggingConfigError, match="unknown level 'LOUD'"):
        parse("loggers:\n  x: LOUD\n", "f.yaml")
    with pytest.raises(LoggingConfigError, match="retention"):
        parse("retention:\n  max.rolled.files: many\n")


def test_the_file_comes_from_the_env_var_else_beside_server_properties(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    props = tmp_path / "server.properties"
    props.write_text("")
    monkeypatch.delenv("KAFKAPY_LOG_CONFIG", raising=False)
    assert config_path(props) is None
    (tmp_path / "logging.yaml").write_text("root: INFO\n")
    assert config_path(props) == tmp_path / "logging.yaml"
    monkeypatch.setenv("KAFKAPY_LOG_CONFIG", str(tmp_path / "other.yaml"))
    assert config_path(props) == tmp_path / "other.yaml"


def _rolled(directory: Path, name: str, hours_ago: int) -> Path:
    t = time.time() - hours_ago * 3600
    path = directory / (name + "." + time.strftime("%Y-%m-%d-%H", time.localtime(t)))
    path.write_text("old\n")
    os.utime(path, (t, t))
    return path


def test_rolled_files_past_the_count_or_the_age_are_deleted_oldest_first(tmp_path: Path) -> None:
    files = [_rolled(tmp_path, "server.log", h) for h in (1, 2, 3, 4, 50)]
    (tmp_path / "server.log.keep-me").write_text("not a rolled file")
    handler = HourlyRollingFileHandler(
        tmp_path / "server.log", Retention(max_rolled_files=3, max_age_hours=48)
    )
    try:
        deleted = handler.delete_expired()
    finally:
        handler.close()
    assert sorted(deleted) == sorted([files[4], files[3]])  # the oldest two past 3 files
    assert [p for p in files if p.exists()] == files[:3]
    assert (tmp_path / "server.log.keep-me").exists()
    handler = HourlyRollingFileHandler(
        tmp_path / "server.log", Retention(max_rolled_files=-1, max_age_hours=1.5)
    )
    try:
        handler.delete_expired()
    finally:
        handler.close()
    assert [p for p in files if p.exists()] == files[:1]


def test_setup_logging_applies_levels_and_cleans_up_at_start(tmp_path: Path) -> None:
    old = _rolled(tmp_path, "kafka-request.log", 500)
    config = parse("loggers:\n  kafka.request.logger: DEBUG\n  some.chatty.lib: ERROR\n")
    try:
        setup_logging(tmp_path, console=False, config=config)
        assert logging.getLogger("kafka.request.logger").isEnabledFor(logging.DEBUG)
        assert not logging.getLogger("some.chatty.lib").isEnabledFor(logging.WARNING)
        assert not old.exists()  # older than the default week
        logging.getLogger("kafka.request.logger").debug("Completed request:x")
        for h in logging.getLogger("kafka.request.logger").handlers:
            h.flush()
        assert (
            "DEBUG Completed request:x (kafka.request.logger)" in (tmp_path / "kafka-request.log").read_text()
        )
    finally:
        setup_logging(tmp_path, console=False)
        logging.getLogger("kafka.request.logger").setLevel(logging.WARNING)
        logging.getLogger("some.chatty.lib").setLevel(logging.NOTSET)
        for name in (
            "",
            "kafkapy.controller",
            "state.change.logger",
            "kafka.request.logger",
            "kafkapy.log.LogCleaner",
        ):
            for h in list(logging.getLogger(name or None).handlers):
                if getattr(h, "_kafkapy", False):
                    logging.getLogger(name or None).removeHandler(h)
                    h.close()
