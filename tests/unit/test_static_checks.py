"""Lint steps the test command runs, so CI (.ci/run -> bin/kafkapy-test -> pytest) fails on them:
`ruff check` and `ruff format --check` over the code and tests, and mypy with the settings in pyproject.toml ([tool.mypy]:
default checks for the whole package, strict ones for kafkapy.protocol and kafkapy.server)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(argv: list[str], timeout_s: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=timeout_s, check=False)


def _ruff() -> list[str]:
    # The ruff beside this interpreter (the venv's), else one on PATH.
    beside = Path(sys.executable).with_name("ruff")
    found = str(beside) if beside.exists() else shutil.which("ruff")
    if found is None:
        pytest.fail("ruff is not installed: it is in the test extra (pip install -e '.[test]')")
    return [found]


@pytest.mark.timeout(180)
def test_ruff_check_is_clean() -> None:
    result = _run([*_ruff(), "check", "kafkapy", "tests", "benchmarks"], timeout_s=150)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.timeout(180)
def test_ruff_format_is_applied() -> None:
    result = _run([*_ruff(), "format", "--check", "kafkapy", "tests", "benchmarks"], timeout_s=150)
    assert result.returncode == 0, (
        "run `ruff format kafkapy tests benchmarks`:\n" + result.stdout + result.stderr
    )


@pytest.mark.timeout(600)
def test_mypy_passes() -> None:
    try:
        import mypy  # noqa: F401
    except ImportError:
        pytest.fail("mypy is not installed: it is in the test extra (pip install -e '.[test]')")
    # Settings and the package list come from pyproject.toml; the cache keeps re-runs fast.
    result = _run([sys.executable, "-m", "mypy"], timeout_s=540)
    assert result.returncode == 0, result.stdout + result.stderr
