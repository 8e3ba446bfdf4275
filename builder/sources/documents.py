"""Inputs written as one JSON document instead of JSONL: a list of records, an object that
lists them under a key (a bank's ``{"questions": [...]}``), or one record pretty-printed
over several lines, as the capture side's fixtures and banks are.

Such a document's records become one ``SourceLine`` each: the record's own text, numbered by
the line it starts on, so a reject names the file, that line and the field as for a JSONL
line. A file is JSONL when its first non-blank line is a JSON object on its own, so the
common input streams on after one parse of that line. A file whose first line is not one
record is read whole, up to ``limit`` bytes, to see whether it is a document; a list larger
than that is streamed item by item instead, so memory stays bounded by the largest item.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Iterator

import numpy as np
import orjson

from builder.sources.inputs import InputError, SourceLine

_DECODER = json.JSONDecoder()
_WHITESPACE = " \t\r\n"


def records(
    lines: Iterable[SourceLine], limit: int | None = None, list_key: str | None = None
) -> Iterator[SourceLine]:
    """The input's records: ``lines`` themselves for JSONL, one per record for a JSON
    document of at most ``limit`` bytes (None: any size) or a larger top-level list.
    ``list_key``: the member of a top-level object that lists the records. In a file named
    JSONL, a stray "{" or "[" line before records, not one document that reads whole, is
    read with its lines; any other broken document is read (or refused) as in a .json."""
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
    opens_array = head[-1].raw.strip() == b"["
    size = sum(len(line.raw) + 1 for line in head)
    for line in it:
        head.append(line)
        size += len(line.raw) + 1
        over = (limit is not None and size > limit) or line.too_long
        if over and opens_array and not _stray_bracket(head):  # stream its items
            blank = next(i for i, line in enumerate(head) if line.raw.strip())
            yield from head[:blank]
            yield from _array_items(itertools.chain(head[blank:], it), limit)
            return
        if over:
            yield from head  # not a document read whole: lines, which validation names
            yield from it
            return
    split = _split(head, list_key)
    blank = next((i for i, line in enumerate(head) if line.raw.strip()), len(head))
    if split is None and _stray_bracket(head):
        # named JSONL, no document, a stray "{" or "[" before records: lines, each bad one
        # its own reject (that line costs itself only, as anywhere else)
        yield from head
        return
    if split is None and opens_array:  # a broken list: item by item, to say where it broke
        yield from head[:blank]
        yield from _array_items(iter(head[blank:]), size)
        return
    if split is None and blank < len(head) and head[blank].raw.strip() == b"{":
        _refuse_broken(head[blank:])  # an object over lines, broken
    yield from head if split is None else split


# a JSON string, never across a line end; the loop unrolled, ≈ 6× faster in ``re``
_STRING = re.compile(rb'"[^"\\\n]*(?:\\.[^"\\\n]*)*"')
_BLOCK_BYTES = 4 << 20


def _with_depth_changes(lines: Iterator[SourceLine]) -> Iterator[tuple[SourceLine, int]]:
    """Each line with the brackets it opens minus those it closes, outside its strings (a
    JSON string never spans lines), counted for a block of lines at a time in numpy."""
    block: list[SourceLine] = []
    size = 0
    for line in itertools.chain(lines, [None]):
        if line is not None:
            block.append(line)
            size += len(line.raw) + 1
            if size < _BLOCK_BYTES:
                continue
        if not block:
            return
        text = b"\n".join(line.raw for line in block)
        bare = np.frombuffer(_STRING.sub(b"", text), dtype=np.uint8)
        step = np.zeros(len(bare) + 1, dtype=np.int64)
        step[1:][(bare == ord("{")) | (bare == ord("["))] = 1
        step[1:][(bare == ord("}")) | (bare == ord("]"))] = -1
        depth = np.cumsum(step)[np.append(np.flatnonzero(bare == ord("\n")), len(bare))]
        yield from zip(block, np.diff(depth, prepend=0).tolist(), strict=True)
        block, size = [], 0


def _array_items(lines: Iterator[SourceLine], limit: int) -> Iterator[SourceLine]:
    """The items of a top-level JSON array too big to read whole, streamed: the array opens
    on a line of its own and each item starts on a new line, as ``json.dump(items, f,
    indent=2)`` writes it. An item over ``limit`` bytes is a ``too_long`` record (its
    prefix); what does not fit this shape becomes records that validation rejects."""
    counted = _with_depth_changes(lines)
    opening, depth = next(counted)  # the "[" line
    last = opening
    item: list[bytes] = []
    start = size = count = 0
    for line, change in counted:
        last = line
        if not item:
            stripped = line.raw.strip()
            if depth == 1 and stripped == b"]":
                depth = 0  # the array closed
                continue
            if depth <= 0 and stripped:  # after the array: the rest as it is
                yield line
                yield from (rest for rest, _ in counted)
                return
            if depth != 1 or not stripped:
                continue  # a blank line between items
        if not item:
            start, size = line.number, 0
        if line.too_long:
            # Its brackets cannot be counted: taken to be none, as in a long string value
            # (``json.dump`` puts each nested container on lines of its own, and no string
            # spans lines), so the item it is in is a line_too_long reject and the rest reads.
            change, size = 0, size + limit + 1
        depth += change
        size += len(line.raw) + 1
        item.append(line.raw if size <= limit else b"")
        if depth <= 1:
            count += 1
            yield _item(line.path, start, item, depth, size > limit, count)
            item = []
    if depth > 0:  # the file ended before the list closed: cut short (a copy that stopped)
        error = InputError(
            f"{last.path}: the JSON list that opens at line {opening.number} is not closed: "
            f"the file ends at line {last.number}, inside {'an item' if item else 'the list'} "
            "(cut short?) — complete the file or write it again"
        )
        error.hint = ""
        raise error


def _item(
    path: str, start: int, item: list[bytes], depth: int, too_long: bool, count: int
) -> SourceLine:
    text = b"\n".join(item).strip()
    if depth == 0 and text.endswith(b"]"):  # the array closed on the item's last line
        text = text[:-1].rstrip()
    text = text.removesuffix(b",")
    return SourceLine(path, start, text[:256] if too_long else text, too_long, count)


def _may_be_document(first: SourceLine, list_key: str | None) -> bool:
    """False for the first line of a JSONL file: a JSON object on its own."""
    if first.too_long:
        return False
    try:
        value = orjson.loads(first.raw)
    except orjson.JSONDecodeError:
        # the start of a pretty-printed document, or a broken line (or one with NaN or a
        # lone surrogate, which orjson refuses: ``_split`` finds it is not a document)
        return True
    if isinstance(value, dict):
        return list_key is not None and isinstance(value.get(list_key), list)
    # a list on one line: the whole of a .json file, but a bad line of a file named JSONL
    return isinstance(value, list) and not named_jsonl(first.path)


def _stray_bracket(head: list[SourceLine]) -> bool:
    """Whether the "[" or "{" that opens a file named JSONL is a stray line before records,
    not a document: the next non-blank line is a JSON value on its own, where the first item
    of a list ``json.dump(items, f, indent=2)`` writes ends in a comma or opens a container,
    and the first member of a pretty-printed object is ``"key": value``."""
    shown = list(itertools.islice((x for x in head if x.raw.strip() or x.too_long), 2))
    if len(shown) < 2 or any(x.too_long for x in shown) or not named_jsonl(shown[0].path):
        return False
    if shown[0].raw.strip() not in (b"[", b"{"):
        return False
    try:
        orjson.loads(shown[1].raw)
    except orjson.JSONDecodeError:
        return False
    return True


def named_jsonl(path: str) -> bool:
    """Named as JSONL (one record per line), compressed or not."""
    return path.removesuffix(".gz").removesuffix(".zst").endswith((".jsonl", ".ndjson"))


def _split(lines: list[SourceLine], list_key: str | None) -> list[SourceLine] | None:
    """One ``SourceLine`` per record of the document ``lines`` hold, ``lines`` as they are
    when they are one JSON value but no document of records, None when no JSON value."""
    try:
        text = b"\n".join(line.raw for line in lines).decode("utf-8")
        document = _DECODER.decode(text)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None  # not one document: broken lines that validation names
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
        SourceLine(path, first + text.count("\n", 0, begin), text[begin:end].encode(), item=k)
        for k, (begin, end) in enumerate(spans, 1)
    ]


def _refuse_broken(lines: list[SourceLine]) -> None:
    """A pretty-printed object (one record, or a bank's ``{"questions": [...]}``) that is no
    JSON value: refused, naming where it breaks, rather than one reject per physical line."""
    first = lines[0]
    try:
        _DECODER.decode(b"\n".join(line.raw for line in lines).decode("utf-8", "replace"))
    except ValueError as exc:
        at = first.number + getattr(exc, "lineno", 1) - 1
        said = getattr(exc, "msg", str(exc))
        error = InputError(
            f"{first.path}: the JSON document that opens at line {first.number} breaks at "
            f"line {at}: {said} (cut short?) — complete the file or write it again"
        )
        error.hint = ""
        raise error from None
    except RecursionError:
        return


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
