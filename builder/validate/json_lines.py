"""JSON lines as the validate stage reads them: RFC 8259 JSON (orjson, UTF-8 only) plus the
extension Python's ``json`` writes by default (``NaN``, ``Infinity``, ``-Infinity``), exact
integers beyond 64 bits, and the paths of what made a line unreadable or ambiguous (a lone
surrogate, a raw control character, a key twice)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import orjson

from builder.sources.inputs import SourceLine
from builder.validate.reject import FieldError, Reject
from schemas.vocabulary import INVALID_JSON, INVALID_UTF8, LINE_TOO_LONG


def parse_line(line: SourceLine, read: LineJSON | None = None) -> tuple[Any, Reject | None]:
    """JSON-decode a line; returns ``(value, None)`` or ``(None, reject)``. ``read``: the
    line as its other checks read it (``LineJSON``), whose parse is taken when orjson read
    it, rather than parsing the line again (its value is then shared: never to be changed)."""

    def reject(kind: str, message: str) -> tuple[Any, Reject]:
        return None, Reject(line.path, line.number, kind, (FieldError("$", message),), line.raw)

    if line.too_long:
        message = (
            "the line is longer than max_line_bytes (its first 256 bytes are kept here); if "
            "it is one record, raise max_line_bytes in dataset.toml's [checks] and build again"
        )
        return reject(LINE_TOO_LONG, message)
    if read is not None and (value := read.orjson_value()) is not REFUSED:
        return (_exact_integers(line.raw, value) if read.long_run else value), None
    try:
        return _exact_integers(line.raw, orjson.loads(line.raw)), None
    except orjson.JSONDecodeError as exc:
        try:
            line.raw.decode("utf-8")
        except UnicodeDecodeError as bad:
            byte = line.raw[bad.start]
            message = f"invalid UTF-8 byte 0x{byte:02x} at byte {bad.start + 1}"
            return None, Reject(
                line.path,
                line.number,
                INVALID_UTF8,
                (FieldError(_undecodable_path(line.raw), message),),
                line.raw,
            )
        surrogates = _lone_surrogates(line.raw)
        if surrogates:
            errors = tuple(
                FieldError(path, _SURROGATE_MESSAGE.format(char)) for path, char in surrogates
            )
            return None, Reject(line.path, line.number, INVALID_UTF8, errors, line.raw)
        python_dialect = _python_dialect(line.raw)
        if python_dialect is not None:
            return python_dialect, None
        beyond = _beyond_double_path(line.raw)
        if beyond is not None:
            said = f"{beyond[1]} is beyond a double's range (±1.8e308): write it as a string"
            error = FieldError(beyond[0], said)
            return None, Reject(line.path, line.number, INVALID_JSON, (error,), line.raw)
        # where it broke, as a line of the file (a document's record spans several)
        at = f"line {line.number + exc.lineno - 1} column {exc.colno}"
        error = FieldError(_raw_control_path(line.raw), f"invalid JSON: {exc.msg}: {at}")
        return None, Reject(line.path, line.number, INVALID_JSON, (error,), line.raw)


_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_MESSAGE = (
    "holds the lone surrogate \\u{:04x}, escaped in the JSON: not a Unicode character, so it "
    "cannot be stored as UTF-8 text. It is what text decoded with errors='surrogateescape' "
    "keeps of a byte that was not UTF-8; decode captured output with errors='replace'"
)


def _lone_surrogates(raw: bytes, most: int = 5) -> list[tuple[str, int]]:
    """The JSON paths (at most ``most``) of the strings whose ``\\uXXXX`` escapes leave a
    surrogate unpaired (the stdlib reads them, orjson refuses them), with that code point;
    a key holding one is named by its object's path."""
    if b"\\u" not in raw:
        return []
    try:
        value = _stdlib_loads(raw)
    except (ValueError, RecursionError):
        return []
    found: list[tuple[str, int]] = []
    for path, texts in _json_strings(value):
        found += [(path, ord(bad.group())) for t in texts if (bad := _SURROGATE.search(t))]
        if len(found) >= most:
            return found[:most]
    return found


# Stands in for what made a line unreadable, so that the parsed line shows where it was:
# three noncharacters in a row, which no captured text holds (only a line that spelled all
# three as escapes before the bad spot would mislead it).
_MARK = "\ufdd0\ufdd1\ufdd2"
_CONTROL = re.compile("[\x00-\x1f]")
_UNDECODABLE = re.compile("[\udc80-\udcff]")  # what ``surrogateescape`` makes of a bad byte


def _beyond_double_path(raw: bytes) -> tuple[str, str] | None:
    """The JSON path and the spelling of the first number no double holds (``1e400``: Python
    reads ``inf``, which the line did not say), else None."""
    numbers: list[str] = []

    def marked(text: str) -> float | str:
        number = float(text)
        if not math.isinf(number):
            return number
        numbers.append(text)
        return _MARK

    try:
        value = _stdlib_loads(raw, parse_float=marked)
    except (ValueError, RecursionError):
        return None
    if not numbers:
        return None
    path = next((p for p, texts in _json_strings(value) if _MARK in texts), "$")
    return path, numbers[0] if len(numbers[0]) <= 24 else numbers[0][:20] + "…"


def _raw_control_path(raw: bytes) -> str:
    """The JSON path of the first string holding a raw control character (a tab or a
    vertical tab pasted into a string, which JSON requires escaped), else ``$``."""
    text = raw.decode("utf-8", errors="replace")
    return _marked_path(_CONTROL.sub(_MARK, text)) if _CONTROL.search(text) else "$"


def _undecodable_path(raw: bytes) -> str:
    """The JSON path of the first string holding a byte that is not UTF-8 (a key's: its
    object's), or ``$`` when the line is no JSON even so."""
    return _marked_path(_UNDECODABLE.sub(_MARK, raw.decode("utf-8", errors="surrogateescape")))


def _marked_path(text: str) -> str:
    """The path of the first string of the JSON ``text`` that holds ``_MARK``, else ``$``."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return "$"
    for path, texts in _json_strings(value):
        if any(_MARK in t for t in texts):
            return path
    return "$"


def _json_strings(value: Any) -> Iterator[tuple[str, list[str]]]:
    """The strings of a decoded JSON value by path, depth first: a string node's own, an
    object's keys (named by the object's path)."""
    for node, path in _json_nodes(value):
        if isinstance(node, str):
            yield path, [node]
        elif isinstance(node, dict):
            yield path, list(node)


def _json_nodes(value: Any) -> Iterator[tuple[Any, str]]:
    """Every node of a decoded JSON value with its JSON path, depth first, in order."""
    stack: list[tuple[Any, str]] = [(value, "$")]
    while stack:
        node, path = stack.pop()
        yield node, path
        if isinstance(node, dict):
            stack += [(v, f"{path}.{k}") for k, v in reversed(node.items())]
        elif isinstance(node, list):
            stack += [(v, f"{path}[{i}]") for i, v in reversed(list(enumerate(node)))]


def _python_dialect(raw: bytes) -> Any | None:
    """The value of a line that is JSON as Python's ``json`` reads it but orjson refuses:
    ``NaN``/``Infinity`` tokens, or an integer too large for a double (``math.factorial(200)``
    is an answer ``json.dumps`` writes); else None."""
    if b"NaN" not in raw and b"Infinity" not in raw and not has_long_digit_run(raw):
        return None
    try:
        value = _stdlib_loads(raw, parse_float=_finite_float)
    except (ValueError, RecursionError):
        return None
    return value  # never None: a line holding these tokens is not `null`


def _stdlib_loads(raw: bytes, **options: Any) -> Any:
    """``json.loads`` of a line's UTF-8 bytes, refusing a BOM that starts it as orjson does
    (``json.loads`` of bytes skips one itself): one verdict whichever parser reads it."""
    return json.loads(raw.decode("utf-8", "surrogatepass"), **options)


def _finite_float(text: str) -> float:
    """A JSON number as Python reads it, refused when a double cannot hold it (``1`` and 400
    zeros ``.0``: Python reads ``inf``, which the line did not say; ``Infinity`` is a token)."""
    number = float(text)
    if math.isinf(number):
        raise ValueError(f"number {text[:20]}… is beyond a double's range")
    return number


LONG_RUN = 19  # digits: the shortest run that can be an integer beyond 64 bits


def has_long_digit_run(raw: bytes) -> bool:
    """Whether ``raw`` holds 19+ consecutive ASCII digits (what ``rb"\\d{19,}"`` finds).

    Vectorized over the line's bytes: a mask of the digits, then runs of 2, 4, 8, 16 and
    19 digits, each the AND of two shorter runs overlapping (a run of ``a + b`` digits
    starts at ``i`` when runs of ``a`` start at ``i`` and at ``i + b``). Linear, like the
    translate-and-search it replaces and ≈ 2.5× faster on 56 KB lines; the regex retries at
    every digit."""
    if len(raw) < LONG_RUN:
        return False
    run = (np.frombuffer(raw, dtype=np.uint8) - np.uint8(ord("0"))) < 10  # wraps below "0"
    for step in (1, 2, 4, 8, 3):
        run = run[:-step] & run[step:]
    return bool(run.any())


def _exact_integers(raw: bytes, value: Any) -> Any:
    """orjson reads an integer beyond 64 bits as a float (``2**70`` -> ``1.18e21``), which
    changes the value and its hash; such lines are read again by the stdlib, which keeps
    integers exact. Only lines with a run of 19+ digits can hold one, so this is rare."""
    if not has_long_digit_run(raw):
        return value
    try:
        return _stdlib_loads(raw)
    except (ValueError, RecursionError):
        return value


class _Object(dict):
    """A decoded JSON object that remembers which of its keys appeared more than once."""

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs)
        self.repeated = sorted({k for k, _ in pairs if sum(1 for j, _ in pairs if j == k) > 1})


_QUOTE, _BACKSLASH = ord('"'), ord("\\")


def _delimiters(text: bytes) -> int:
    """Quote characters of JSON ``text`` not preceded by a backslash: two per string, less
    one per string whose text ends in a backslash written ``\\\\`` (a quote in a string's
    text is written ``\\"`` or ``\\u0022``: never counted)."""
    chars = np.frombuffer(text, dtype=np.uint8)
    quotes = chars == _QUOTE
    escaped = quotes[1:] & (chars[:-1] == _BACKSLASH)
    return int(np.count_nonzero(quotes)) - int(np.count_nonzero(escaped))


def duplicate_keys(raw: bytes | LineJSON) -> list[str]:
    """JSON paths of keys that appear twice in one object of ``raw`` (the last one wins in
    every JSON parser here, silently).

    Cheap and exact for the common line: written again by orjson, the parsed value keeps
    every string of the line but the keys dropped with their repeats (and the strings of
    their values), and writes a backslash as ``\\\\`` where the line may have spelled it
    ``\\u005c`` (one delimiter fewer, for a string ending in one). So the two counts are
    equal only when no key was repeated. A line that is orjson's own writing of its value,
    byte for byte (what a producer writing with orjson sends; ``json.dumps``' spaces make
    other text), was written from a parsed value, whose objects cannot hold a key twice, so
    it has no repeat and its delimiters need no counting (one comparison of the bytes, where
    the two counts were ≈ 40 µs on a 56 KB line). A line with fewer delimiters written again (a
    repeat, or that rare spelling) or one orjson cannot read is parsed again, which finds
    the repeats and where they are, if any."""
    line = read_json(raw)
    raw = line.raw
    value = line.orjson_value()
    if value is not REFUSED:
        try:
            written = orjson.dumps(value)
        except orjson.JSONEncodeError:
            pass  # nested deeper than orjson writes: look closely
        else:
            if written == raw or _delimiters(raw) == _delimiters(written):
                return []
    try:
        value = _stdlib_loads(raw, object_pairs_hook=_Object)
    except (ValueError, RecursionError):
        return []
    found = [
        f"{path}.{key}"
        for node, path in _json_nodes(value)
        if isinstance(node, _Object)
        for key in node.repeated
    ]
    return sorted(found)


def line_value(raw: bytes | LineJSON) -> Any:
    """The JSON value of a line ``parse_line`` accepted, as it read it."""
    line = read_json(raw)
    value = line.orjson_value()
    if value is REFUSED:
        return _python_dialect(line.raw)
    return _exact_integers(line.raw, value) if line.long_run else value


REFUSED = object()  # what ``LineJSON.orjson_value`` is of a line orjson refuses


class LineJSON:
    """One line for the checks that each read it (the typed decode, ``duplicate_keys``,
    ``line_value``): orjson parses it once and its bytes are scanned for a long digit run
    once, where each check on its own would do both again."""

    __slots__ = ("_read", "_value", "long_run", "raw")

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self.long_run = has_long_digit_run(raw)
        self._value: Any = None
        self._read = False

    def orjson_value(self) -> Any:
        """orjson's value of the line (shared: never to be changed), or ``REFUSED``."""
        if not self._read:
            try:
                self._value = orjson.loads(self.raw)
            except orjson.JSONDecodeError:
                self._value = REFUSED
            self._read = True
        return self._value


def read_json(raw: bytes | LineJSON) -> LineJSON:
    return raw if isinstance(raw, LineJSON) else LineJSON(raw)


def is_blank(line: SourceLine) -> bool:
    return not line.too_long and not line.raw.strip()
