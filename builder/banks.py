"""Question banks as the capture side writes them: JSONL (a question per line), or one JSON
document, its ``questions.json`` (a list of questions, or an object whose ``questions``
lists them, pretty-printed or not), with its own key names (``schemas.layouts.BANK_RENAMES``:
``question`` for the question's text, ``_ground_truth`` for the answer it knows).

A document's questions become one ``SourceLine`` each: the question's own text, numbered by
the line of the document it starts on, so a reject names the file, that line and the field
as for any other input. Banks are small (a few hundred questions a file), so a file is read
whole.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from builder.sources import SourceLine
from schemas.layouts import BANK_RENAMES, BANK_TEXT_FALLBACK

_DECODER = json.JSONDecoder()
_WHITESPACE = " \t\r\n"


def bank_lines(lines: Iterable[SourceLine]) -> list[SourceLine]:
    """The bank's questions: ``lines`` themselves for JSONL, one per question for a JSON
    document (its whole text one JSON list, an object with a ``questions`` list, or one
    question over several lines)."""
    lines = list(lines)
    if not lines or any(line.too_long for line in lines):
        return lines
    try:
        text = b"\n".join(line.raw for line in lines).decode("utf-8")
        document = _DECODER.decode(text)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return lines  # not one document: JSONL, or broken lines that validation names
    if isinstance(document, list):
        spans = _items(text, _skip(text, 0))
    elif isinstance(document, dict) and isinstance(document.get("questions"), list):
        spans = _items(text, _member(text, "questions"))
    elif len(lines) > 1:  # one question, pretty-printed over several lines
        begin = _skip(text, 0)
        spans = [(begin, _DECODER.raw_decode(text, begin)[1])]
    else:
        return lines  # one question on one line: JSONL
    path = lines[0].path
    return [
        SourceLine(path, text.count("\n", 0, begin) + 1, text[begin:end].encode("utf-8"))
        for begin, end in spans
    ]


def with_model_keys(question: Any) -> Any:
    """A bank question with the capture side's key names mapped onto the model's, and its
    text where it asks only ``question_mechanical`` (the text its episodes carry, so the
    question's id is the one they join on)."""
    if not isinstance(question, dict):
        return question
    fallback = question.get(BANK_TEXT_FALLBACK)
    text = question.get("question_text", question.get("question"))
    mechanical = _blank(text) and isinstance(fallback, str) and not _blank(fallback)
    if not mechanical and not any(k in question for k in BANK_RENAMES):
        return question
    out = dict(question)
    for theirs, ours in BANK_RENAMES.items():
        if theirs in out and ours not in out:
            out[ours] = out.pop(theirs)
    if mechanical:
        out["question_text"] = fallback
    return out


def _blank(text: Any) -> bool:
    return text is None or (isinstance(text, str) and not text.strip())


def bank_path(question: Any, path: str) -> str:
    """A JSON path into the model as the bank line spells it (``$.question_text`` is
    ``$.question`` in a line that used the capture side's key)."""
    if not isinstance(question, dict):
        return path
    for theirs, ours in BANK_RENAMES.items():
        named = path == f"$.{ours}" or path.startswith((f"$.{ours}.", f"$.{ours}["))
        if named and theirs in question and ours not in question:
            return f"$.{theirs}" + path[len(ours) + 2 :]
    return path


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
