"""java.util.Properties format: what Java's Properties.load reads, we read the same."""

from __future__ import annotations

import pytest

from kafkapy.common.properties import PropertiesError, dump, load, load_file


def test_hash_and_bang_lines_are_comments() -> None:
    assert load("# a comment\n! another\n  # indented comment\nkey=value\n") == {"key": "value"}


def test_blank_and_whitespace_only_lines_are_skipped() -> None:
    assert load("\n   \n\t\na=1\n\n") == {"a": "1"}


@pytest.mark.parametrize(
    "line",
    ["key=value", "key:value", "key value", "key = value", "key\t:\tvalue", "  key   value", "key\f=value"],
)
def test_equals_colon_or_whitespace_separate_key_and_value(line: str) -> None:
    assert load(line) == {"key": "value"}


def test_only_the_first_separator_counts() -> None:
    assert load("url=http://host:80/x=y") == {"url": "http://host:80/x=y"}
    assert load("key = = value") == {"key": "= value"}


def test_key_without_value_maps_to_empty_string() -> None:
    assert load("lonely\nempty=\n") == {"lonely": "", "empty": ""}


def test_trailing_whitespace_of_values_is_kept() -> None:
    assert load("a=b  \n") == {"a": "b  "}


def test_escaped_separators_belong_to_the_key() -> None:
    assert load(r"a\=b\:c\ d=e") == {"a=b:c d": "e"}


def test_character_escapes() -> None:
    assert load(r"k=tab\there\nnew\rret\fff\\back\q") == {"k": "tab\there\nnew\rret\fff\\backq"}


def test_unicode_escapes_including_surrogate_pairs() -> None:
    assert load(r"k=caf\u00e9 \u20AC") == {"k": "café €"}
    assert load(r"k=\ud83d\ude00") == {"k": "\U0001f600"}


def test_malformed_unicode_escape_names_the_line() -> None:
    with pytest.raises(PropertiesError, match=r"line 2: Malformed \\uxxxx encoding"):
        load("ok=1\nbad=\\u12G4\n")


def test_backslash_continues_a_line_and_drops_leading_whitespace() -> None:
    text = "fruits = apple, banana, \\\n         pear, \\\n    cantaloupe\nnext=1\n"
    assert load(text) == {"fruits": "apple, banana, pear, cantaloupe", "next": "1"}


def test_even_number_of_trailing_backslashes_does_not_continue() -> None:
    assert load("a=x\\\\\nb=y\n") == {"a": "x\\", "b": "y"}


def test_hash_on_a_continuation_line_is_part_of_the_value() -> None:
    assert load("a=1,\\\n  #2\n") == {"a": "1,#2"}


def test_blank_line_ends_a_continuation() -> None:
    assert load("a=1\\\n\nb=2") == {"a": "1", "b": "2"}


def test_continuation_at_end_of_text_ends_the_value() -> None:
    assert load("a=1\\") == {"a": "1"}


def test_comment_line_ending_in_backslash_does_not_continue() -> None:
    assert load("# comment \\\na=1\n") == {"a": "1"}


def test_all_line_terminators() -> None:
    assert load("a=1\r\nb=2\rc=3\n") == {"a": "1", "b": "2", "c": "3"}


def test_last_value_of_a_repeated_key_wins_and_order_is_kept() -> None:
    props = load("b=1\na=2\nb=3\n")
    assert props == {"b": "3", "a": "2"}
    assert list(props) == ["b", "a"]


def test_dump_round_trips_awkward_keys_and_values() -> None:
    props = {"key with=:#!": "  leading spaces", "path": "C:\\dir\\file", "uni": "é\U0001f600", "nl": "a\nb"}
    assert load(dump(props, header="generated")) == props


def test_load_file_reads_utf8_and_falls_back_to_latin1(tmp_path) -> None:
    utf8 = tmp_path / "u.properties"
    utf8.write_bytes("k=café\n".encode())
    latin1 = tmp_path / "l.properties"
    latin1.write_bytes("k=café\n".encode("iso-8859-1"))
    assert load_file(utf8) == load_file(latin1) == {"k": "café"}
