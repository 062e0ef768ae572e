"""The java.util.Properties text format, which server.properties and zoo.cfg are written in.

Rules (as `Properties.load(Reader)` documents them):
- a *natural line* ends at \\n, \\r or \\r\\n; a *logical line* is one or more natural lines
  joined where a line ends in an odd number of backslashes (the continuation backslash is
  dropped, and so is the leading whitespace of the following line);
- leading whitespace (space, tab, form feed) is skipped; a logical line whose first
  character is '#' or '!' is a comment; blank lines are skipped;
- the key runs up to the first unescaped '=', ':' or whitespace; then whitespace, at most one
  '=' or ':', and more whitespace are skipped; the rest is the value (trailing whitespace is
  kept);
- escapes: \\t \\n \\r \\f, \\uXXXX, and a backslash before any other character stands for
  that character (so '\\=' or '\\ ' put a separator into a key).

Kafka reads server.properties through `Properties.load(InputStream)`, i.e. as ISO-8859-1;
we read files as UTF-8 (what editors write today) and fall back to ISO-8859-1 when the bytes
are not UTF-8, which gives the same result for the ASCII files everyone actually writes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path

_WHITESPACE = " \t\f"
_SEPARATORS = "=:"
_NATURAL_LINE = re.compile(r"\r\n|\r|\n")
_SIMPLE_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


class PropertiesError(ValueError):
    """The text is not valid java.util.Properties syntax (only a bad \\uXXXX escape is)."""


def load(text: str) -> dict[str, str]:
    """Parses properties text; keys keep file order and a repeated key keeps its last value."""
    props: dict[str, str] = {}
    for line_no, logical in _logical_lines(text):
        key_raw, value_raw = _split_key_value(logical)
        try:
            props[_unescape(key_raw)] = _unescape(value_raw)
        except PropertiesError as e:
            raise PropertiesError(f"line {line_no}: {e}") from None
    return props


def load_file(path: str | Path) -> dict[str, str]:
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("iso-8859-1")
    return load(text)


def dump(props: Mapping[str, object], header: str | None = None) -> str:
    """Writes properties that `load` (and Java) read back unchanged; for generated zoo.cfg files."""
    out: list[str] = []
    if header:
        out.extend(f"# {line}" for line in header.splitlines())
    for key, value in props.items():
        out.append(f"{_escape(str(key), is_key=True)}={_escape(str(value), is_key=False)}")
    return "\n".join(out) + "\n"


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """Yields (first natural line number, logical line with continuations joined)."""
    parts: list[str] = []
    start = 0
    for number, natural in enumerate(_NATURAL_LINE.split(text), start=1):
        stripped = natural.lstrip(_WHITESPACE)
        if not parts:
            # Comments and blank lines only count at the start of a logical line: a '#' on a
            # continuation line is part of the value.
            if not stripped or stripped[0] in "#!":
                continue
            start = number
        trailing = len(stripped) - len(stripped.rstrip("\\"))
        if trailing % 2 == 1:
            parts.append(stripped[:-1])
            continue
        parts.append(stripped)
        yield start, "".join(parts)
        parts = []
    if parts:  # a continuation backslash on the last line simply ends the value
        yield start, "".join(parts)


def _split_key_value(line: str) -> tuple[str, str]:
    key_end = len(line)
    value_start = len(line)
    has_separator = False
    escaped = False
    for i, c in enumerate(line):
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c in _SEPARATORS or c in _WHITESPACE:
            key_end = i
            value_start = i + 1
            has_separator = c in _SEPARATORS
            break
    while value_start < len(line):
        c = line[value_start]
        if c in _WHITESPACE:
            value_start += 1
        elif c in _SEPARATORS and not has_separator:
            has_separator = True
            value_start += 1
        else:
            break
    return line[:key_end], line[value_start:]


def _unescape(raw: str) -> str:
    if "\\" not in raw:
        return raw
    out: list[str] = []
    i = 0
    while i < len(raw):
        c = raw[i]
        if c != "\\" or i + 1 == len(raw):
            out.append(c)
            i += 1
            continue
        nxt = raw[i + 1]
        if nxt == "u":
            digits = raw[i + 2 : i + 6]
            if len(digits) != 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise PropertiesError(f"Malformed \\uxxxx encoding: \\u{digits}")
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_SIMPLE_ESCAPES.get(nxt, nxt))
        i += 2
    text = "".join(out)
    # Java strings are UTF-16: characters beyond the BMP arrive as two \uXXXX escapes (a
    # surrogate pair), which Python must recombine into one code point.
    if any("\ud800" <= ch <= "\udfff" for ch in text):
        text = text.encode("utf-16-be", "surrogatepass").decode("utf-16-be", "replace")
    return text


def _escape(s: str, *, is_key: bool) -> str:
    out: list[str] = []
    for i, c in enumerate(s):
        if c == "\\":
            out.append("\\\\")
        elif c in "\t\n\r\f":
            out.append("\\" + {"\t": "t", "\n": "n", "\r": "r", "\f": "f"}[c])
        elif c == " " and (is_key or i == 0):
            # Spaces end a key, and a value's leading spaces would be skipped on reading.
            out.append("\\ ")
        elif is_key and c in "=:#!":
            out.append("\\" + c)
        elif ord(c) < 0x20 or ord(c) > 0x7E:
            # ASCII-only output keeps the file identical whichever charset Java reads it with.
            out.append("".join(f"\\u{unit:04x}" for unit in _utf16_units(c)))
        else:
            out.append(c)
    return "".join(out)


def _utf16_units(c: str) -> list[int]:
    encoded = c.encode("utf-16-be")
    return [int.from_bytes(encoded[j : j + 2], "big") for j in range(0, len(encoded), 2)]
