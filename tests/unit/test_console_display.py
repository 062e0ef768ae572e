"""The console's pure helpers: how record bytes become display text, and where a login may
send the browser next."""

from __future__ import annotations

from kafkapy.console.app import _safe_next
from kafkapy.console.records_view import DISPLAY_LIMIT, Shown


def test_short_text_is_shown_whole() -> None:
    assert Shown.of(b"<b>hi</b>") == Shown("<b>hi</b>", 9, False)


def test_null_stays_null() -> None:
    assert Shown.of(None) == Shown(None, 0, False)


def test_a_megabyte_is_cut_to_the_display_limit_with_its_size() -> None:
    shown = Shown.of(b"x" * (1 << 20))
    assert shown.text == "x" * DISPLAY_LIMIT and shown.size == 1 << 20 and shown.truncated


def test_invalid_utf8_is_replaced_not_raised() -> None:
    assert Shown.of(b"\xff ok").text == "\ufffd ok"


def test_multibyte_text_is_cut_by_characters() -> None:
    shown = Shown.of(("é" * (DISPLAY_LIMIT + 10)).encode())
    assert shown.text == "é" * DISPLAY_LIMIT and shown.truncated


def test_text_at_exactly_the_limit_is_not_marked_cut() -> None:
    assert not Shown.of(b"y" * DISPLAY_LIMIT).truncated


def test_login_redirects_only_to_paths_of_the_console() -> None:
    assert _safe_next("/topics/a") == "/topics/a"
    assert _safe_next("https://evil.example/") == "/"
    assert _safe_next("//evil.example/") == "/"
    assert _safe_next(None) == "/"
