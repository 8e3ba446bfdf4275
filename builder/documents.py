"""Inputs written as one JSON document instead of JSONL: a list of records, an object that
lists them under a key (a bank's ``{"questions": [...]}``), or one record pretty-printed
over several lines, as the capture side's fixtures and banks are.

Such a document's records become one ``SourceLine`` each: the record's own text, numbered by
the line it starts on, so a reject names the file, that line and the field as for a JSONL
line. A file is JSONL when its first non-blank line is a JSON object on its own, so the
common input streams on after one parse of that line; only a file whose first line is not
one record is read whole (up to ``limit`` bytes) to see whether it is a document.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from builder.sources import SourceLine

_DECODER = json.JSONDecoder()
_WHITESPACE = " \t\r\n"


def records(
    lines: Iterable[SourceLine], limit: int | None = None, list_key: str | None = None
) -> Iterator[SourceLine]:
    """The input's records: ``lines`` themselves for JSONL, one per record for a JSON
    document of at most ``limit`` bytes (None: any size). ``list_key``: the member of a
    top-level object that lists the records."""
    it = iter(lines)
    head: list[SourceLine] = []
    for line in it:
        head.append(line)
        if line.raw.strip() or line.too_long:
            break
    if not head or not _may_be_document(head[-1], list_key):
        yield from head
        yield from it
        return
    size = sum(len(line.raw) + 1 for line in head)
    for line in it:
        head.append(line)
        size += len(line.raw) + 1
        if line.too_long or (limit is not None and size > limit):
            yield from head  # too big to read whole: lines, which validation names
            yield from it
            return
    yield from _split(head, list_key)


def _may_be_document(first: SourceLine, list_key: str | None) -> bool:
    """False for the first line of a JSONL file: a JSON object on its own."""
    if first.too_long:
        return False
    try:
        value = json.loads(first.raw)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return True  # the start of a pretty-printed document, or a broken line
    if isinstance(value, dict):
        return list_key is not None and isinstance(value.get(list_key), list)
    return isinstance(value, list)


def _split(lines: list[SourceLine], list_key: str | None) -> list[SourceLine]:
    """One ``SourceLine`` per record of the document ``lines`` hold, or ``lines`` as they
    are when they are not one JSON document."""
    try:
        text = b"\n".join(line.raw for line in lines).decode("utf-8")
        document = _DECODER.decode(text)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return lines  # not one document: broken lines that validation names
    if isinstance(document, list):
        spans = _items(text, _skip(text, 0))
    elif isinstance(document, dict) and list_key and isinstance(document.get(list_key), list):
        spans = _items(text, _member(text, list_key))
    elif isinstance(document, dict) and len(lines) > 1:  # one record, pretty-printed
        begin = _skip(text, 0)
        spans = [(begin, _DECODER.raw_decode(text, begin)[1])]
    else:
        return lines
    path, first = lines[0].path, lines[0].number
    return [
        SourceLine(path, first + text.count("\n", 0, begin), text[begin:end].encode("utf-8"))
        for begin, end in spans
    ]


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WHITESPACE:
        i += 1
    return i


def _member(text: str, key: str) -> int:
    """Where the top-level object's last ``key`` member's value starts (the last, as
    parsers keep it)."""
    found, i = -1, _skip(text, 0) + 1  # past "{"
    while True:
        i = _skip(text, i)
        if text[i] == "}":
            return found
        name, i = _DECODER.raw_decode(text, i)
        i = _skip(text, _skip(text, i) + 1)  # past ":"
        if name == key:
            found = i
        _, i = _DECODER.raw_decode(text, i)
        i = _skip(text, i)
        if text[i] == ",":
            i += 1


def _items(text: str, i: int) -> list[tuple[int, int]]:
    """(start, end) of each item of the JSON array that starts at ``i``."""
    out: list[tuple[int, int]] = []
    i = _skip(text, i + 1)  # past "["
    while text[i] != "]":
        _, end = _DECODER.raw_decode(text, i)
        out.append((i, end))
        i = _skip(text, end)
        if text[i] == ",":
            i = _skip(text, i + 1)
    return out
