"""The scale report: cells for figures, missed targets, timeouts; the markdown block replaced in place."""

from __future__ import annotations

from pathlib import Path

from benchmarks import scale_report


def _doc() -> dict:
    return {
        "runs": {
            "1000": {"steps": {"create": {"all_isr_full_s": 12.5}, "shutdown": {"sigterm_to_exit_s": 4.0}}},
            "10000": {"steps": {"create": {"timeout": "create: every ISR full: not reached", "state": "x"}}},
        }
    }


def test_table_marks_missed_targets_and_timeouts() -> None:
    text = scale_report.table(_doc())
    assert "| 1000 partitions | 10000 partitions |" in text
    create = next(line for line in text.splitlines() if line.startswith("| create: every ISR full"))
    assert "| 12.50 | timeout |" in create
    shutdown = next(line for line in text.splitlines() if "SIGTERM to exit" in line)
    assert "**4.00** (missed)" in shutdown
    assert "create: every ISR full: not reached (x)" in text


def test_markdown_block_is_replaced_and_the_rest_kept(tmp_path: Path) -> None:
    md = tmp_path / "b.md"
    md.write_text("# B\n\nkeep me\n")
    scale_report.update_markdown(_doc(), md, None)
    scale_report.update_markdown(_doc(), md, None)
    text = md.read_text()
    assert text.startswith("# B\n\nkeep me\n")
    assert text.count("## Scale") == 1 and text.count(scale_report.BEGIN) == 1


def test_notes_name_each_steps_load_and_the_runs_own_notes() -> None:
    doc = _doc()
    run = doc["runs"]["1000"]
    run["steps"]["create"]["load_avg"] = [10.0, 8.25, 6.0]
    run["notes"] = ["startup: from a second run"]
    text = scale_report.table(doc)
    assert "  - load average after each step: create 10.0/8.2/6.0" in text
    assert "  - startup: from a second run" in text
