"""Question banks as the capture side writes them: JSONL (a question per line), or one JSON
document, its ``questions.json`` (a list of questions, or an object whose ``questions``
lists them, pretty-printed or not), with its own key names (``schemas.layouts.BANK_RENAMES``:
``question`` for the question's text, ``_ground_truth`` for the answer it knows).

A document's questions become one ``SourceLine`` each (``builder.sources.documents``), numbered by
the line each starts on. Banks are small (a few hundred questions a file), so a document is
read whole whatever its size.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from builder.sources.documents import records
from builder.sources.inputs import SourceLine
from schemas.episode import QUESTION_TEXT_PATTERN
from schemas.layouts import BANK_LIST_KEY, BANK_RENAMES, BANK_TEXT_FALLBACK

_TEXT = re.compile(QUESTION_TEXT_PATTERN)  # blank means what the schema refuses


def bank_lines(lines: Iterable[SourceLine]) -> list[SourceLine]:
    """The bank's questions: ``lines`` themselves for JSONL, one per question for a JSON
    document (a list, an object with a ``questions`` list, or one question over several
    lines)."""
    return list(records(lines, list_key=BANK_LIST_KEY))


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
    return text is None or (isinstance(text, str) and _TEXT.search(text) is None)


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
