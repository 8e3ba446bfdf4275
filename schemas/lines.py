"""Episode lines rebuilt from their table rows: the inverse of normalize.

The typed columns hold an episode's content; what they cannot say of one line (a field the
line left out rather than gave as null, a timestamp's own spelling, its question's fields as
this episode captured them, a hash the builder filled in, a listing's own order) is the
episode's ``line_patch``: edits onto the line ``rebuild`` makes from the rows, so that the
rows plus the patch give back the line as a JSON value. Normalize computes the patch
(``line_patch``) from the rows it has just made, and the restore reader applies it
(``apply_patch``) to the rows it reads from a build folder, so both ends must rebuild the
same line from the same rows: that is why the rebuild lives here, below both.

The question is rebuilt from the ``questions`` row of its id with its text and hint only:
that row is the first source's (a bank's, or an earlier episode's), so every other field of
an episode's question is its own, kept in its patch.

What cannot come back is declared, never dropped silently: a hook value the build bounded
(``value_bounded``) is rebuilt as its summary, and ``line_patch`` counts it by JSON path
instead of keeping the original (that would bring back the bytes bounding saved).
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from json.encoder import encode_basestring_ascii as _ascii
from types import SimpleNamespace
from typing import Any

from schemas.json_text import read_json_text as _json
from schemas.layouts import LAYOUTS_BY_NAME, SEEDS

# The version of ``rebuild``: a build's patches fit only the rebuild they were computed
# against, so any change to what ``rebuild`` makes of the rows is a new rule (the manifest's
# ``round_trip.rule``), and ``tests/schemas/test_lines.py`` pins what this one makes.
REBUILD_RULE = 1

# A row of one table: a mapping of its columns, or a named tuple of them (normalize's rows)
Row = Mapping[str, Any] | tuple[Any, ...]
# A row as ``rebuild`` reads it: its columns are attributes (``_named``)
Named = Any
Path = list[str | int]


@dataclass(frozen=True)
class EpisodeRows:
    """One episode's rows of every table (each list in table order); ``question``: the
    ``question_text`` and ``hint`` of its question."""

    episode: Row
    question: Mapping[str, Any] | None
    traces: Sequence[Row]
    turns: Sequence[Row]
    hooks: Sequence[Row]
    corrections: Sequence[Row]
    messages: Sequence[Row]


class Bounded:
    """A value the tables hold only as its bounded summary (``rebuild(mark_bounded=True)``)."""

    __slots__ = ("summary",)

    def __init__(self, summary: Any) -> None:
        self.summary = summary


def _iso(moment: datetime | None) -> str | None:
    # The capture side writes ``datetime.now().isoformat()``: naive, as the tables read it.
    return None if moment is None else moment.replace(tzinfo=None).isoformat()


def _by(rows: Iterable[Named], key: str) -> dict[Any, list[Named]]:
    out: dict[Any, list[Named]] = defaultdict(list)
    for row in rows:
        out[getattr(row, key)].append(row)
    return out


def _hook(row: Named, mark_bounded: bool) -> dict[str, Any]:
    out = {
        "code_line": row.code_line,
        "variable_name": row.variable_name,
        "value_hash": row.value_hash,
        "description": row.description,
        "depends_on": list(row.depends_on or []),
    }
    if row.value is not None:
        value = _json(row.value)
        out["value"] = Bounded(value) if mark_bounded and row.value_bounded else value
    return out


def _turn(row: Named, hooks: list[dict[str, Any]], correction: Named | None) -> dict[str, Any]:
    fix = None
    if correction is not None:
        fix = {
            "corrects_turn": correction.corrects_turn,
            "error_type": correction.error_type,
            "error_message": correction.error_message,
            "attempts_since_error": correction.attempts_since_error,
            "code_diff": {
                "removed_lines": list(correction.removed_lines or []),
                "added_lines": list(correction.added_lines or []),
            },
        }
    return {
        "turn_index": row.turn_index,
        "reasoning": row.reasoning,
        "code": row.code,
        "execution": {
            "success": row.success,
            "stdout": row.stdout,
            "stderr": row.stderr,
            "hooks": hooks,
            "submitted_answer": _json(row.submitted_answer),
        },
        "correction": fix,
    }


def _trace(
    row: Named, turns: list[Named], hooks: list[Named], fixes: list[Named], mark: bool
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if row.form == "flat":
        out["code_cells"] = [turn.code for turn in turns]
    else:
        at_turn = _by((h for h in hooks if h.listed_in != "trace"), "turn_index")
        by_turn: dict[Any, deque[Named]] = defaultdict(deque)
        for fix in fixes:
            by_turn[fix.turn_index].append(fix)
        out["turns"] = [
            _turn(
                turn,
                [_hook(h, mark) for h in at_turn.get(turn.turn_index, [])],
                by_turn[turn.turn_index].popleft()
                if turn.has_correction and by_turn[turn.turn_index]
                else None,
            )
            for turn in turns
        ]
    out["final_answer"] = _json(row.final_answer)
    out["final_answer_hash"] = row.final_answer_hash
    out["execution_success"] = row.execution_success
    out["hooks"] = [_hook(h, mark) for h in hooks if h.listed_in != "turn"]
    out["submission_metadata"] = _json(row.submission_metadata)
    for name in ("total_turns", "archived_turn_count"):  # absent from the later layout
        if getattr(row, name) is not None:
            out[name] = getattr(row, name)
    return out


def _message(row: Named) -> dict[str, Any]:
    out: dict[str, Any] = {"role": row.role}
    content = row.content if row.content is not None else _json(row.content_parts)
    out["content"] = content
    for name in ("tool_calls",):
        if getattr(row, name) is not None:
            out[name] = _json(getattr(row, name))
    for name in ("tool_call_id", "name"):
        if getattr(row, name) is not None:
            out[name] = getattr(row, name)
    out.update(_json(row.extra_fields) or {})
    return out


_PLAIN = re.compile(r"[A-Za-z_\x80-\U0010ffff][A-Za-z0-9_\x80-\U0010ffff]*")
_STEP = re.compile(r'\.([^.\[]+)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]')


def path_key(key: str) -> str:
    """A key as a JSON path step: ``.x_note`` for a plain name (RFC 9535's shorthand), else
    the key as a JSON string in brackets (``["a.b[0]"]``), never read as several steps."""
    plain = key.isidentifier() or _PLAIN.fullmatch(key)
    return f".{key}" if plain else f"[{json.dumps(key, ensure_ascii=False)}]"


def path_steps(path: str) -> Path:  # the keys and indexes of a path, keys as ``path_key``s
    return [json.loads(q) if q else int(i) if i else k for k, i, q in _STEP.findall(path[1:])]


def _set_extra(line: dict[str, Any], path: str, value: Any) -> None:
    """Put an unknown field back at its JSON path (``$.gold_trace.turns[0].x``), or nowhere
    if it cannot be followed: the patch, computed against this same rebuild, corrects it."""
    steps = path_steps(path)
    node: Any = line
    for step in steps[:-1]:
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            return
    if steps and isinstance(node, dict) and isinstance(steps[-1], str):
        node[steps[-1]] = value


def _named(rows: Sequence[Row]) -> list[Any]:
    """Rows whose columns read as attributes: a named tuple (normalize's row) as it is, a
    mapping (a table's row as a dict) as a namespace of its columns. Normalize's rows are
    read without first becoming dicts, which was most of what its patch cost."""
    return [row if isinstance(row, tuple) else SimpleNamespace(**row) for row in rows]


def rebuild(rows: EpisodeRows, mark_bounded: bool = False) -> dict[str, Any]:
    """The line of an episode as its rows say it, in the layout it was captured in (before
    its patch). With ``mark_bounded``, a bounded hook value is a ``Bounded``."""
    rows = EpisodeRows(
        _named([rows.episode])[0],
        rows.question,
        _named(rows.traces),
        _named(rows.turns),
        _named(rows.hooks),
        _named(rows.corrections),
        _named(rows.messages),
    )
    ep = rows.episode
    question = rows.question or {}
    line: dict[str, Any] = {"episode_id": ep.episode_id}
    if ep.timestamp is not None:
        line["timestamp"] = _iso(ep.timestamp)
    line["verified"] = ep.verified
    line["question"] = {
        "id": ep.question_id,
        "question_text": question.get("question_text"),
        # ``sha256(text|hint)`` is the same for a null and an empty hint: either row may be
        # the one an episode finds, so the rebuild says null for both.
        "hint": question.get("hint") or None,
    }
    turns, hooks = _by(rows.turns, "trace_id"), _by(rows.hooks, "trace_id")
    fixes = _by(rows.corrections, "trace_id")
    traces = [
        _trace(
            t,
            turns.get(t.trace_id, []),
            hooks.get(t.trace_id, []),
            fixes.get(t.trace_id, []),
            mark_bounded,
        )
        for t in sorted(rows.traces, key=lambda t: (t.role != "gold", t.trace_index))
    ]
    line["teacher_gold_trace"] = traces[0] if traces else None
    line["consistency_traces"] = traces[1:]
    if ep.n_messages is not None:
        messages = sorted(rows.messages, key=lambda m: m.message_index)
        line["conversation_for_sft"] = {
            "system_prompt": ep.system_prompt,
            "messages": [_message(m) for m in messages],
        }
    if ep.expected_final_answer is not None or ep.expected_final_answer_hash is not None:
        line["rl_verification_data"] = {
            "expected_final_answer_hash": ep.expected_final_answer_hash,
            "expected_final_answer": _json(ep.expected_final_answer),
        }
    if ep.gold_matches_majority is not None:
        line["triangulation_metadata"] = {
            name: getattr(ep, name)
            for name in (
                "n_consistency_runs",
                "n_consistency_succeeded",
                "majority_answer_hash",
                "majority_count",
                "gold_matches_majority",
            )
        }
    if ep.csv_source is not None:
        line["csv_source"] = ep.csv_source
    line = LAYOUTS_BY_NAME.get(ep.layout or SEEDS.name, SEEDS).to_line(line)
    for path, value in (_json(ep.extra_fields) or {}).items():
        _set_extra(line, path, value)
    return line


# --- the patch: [path, value] sets a value, [path] deletes a key ---------------------------


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


def same(a: Any, b: Any) -> bool:
    """Equal as JSON values: ``1 == 1.0`` but ``true != 1``, NaN equals NaN, key order
    aside."""
    kind = _kind(a)
    if kind != _kind(b):
        return False
    if kind == "number":
        return a == b or (
            isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)
        )
    if kind == "dict":
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if kind == "list":
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _generic(path: Path) -> str:
    return "$" + "".join("[*]" if isinstance(s, int) else f".{s}" for s in path)


SummaryCheck = Callable[[Any, Any], bool]


def _diff(
    built: Any,
    line: Any,
    path: Path,
    ops: list[list[Any]],
    lost: dict[str, int],
    summarizes: SummaryCheck,
) -> None:
    # Only where ``built != line`` (Python's own comparison, in C: the rebuilt values keep
    # true and 1 apart, so only NaN, a difference or a bounded value get here). The caller
    # has just compared the two: comparing again here walked every equal value before the
    # difference once more, at every level down to it.
    if isinstance(built, Bounded):
        if summarizes(line, built.summary):
            lost[_generic(path)] = lost.get(_generic(path), 0) + 1
        else:  # a twin listing's own value, not the one bounded: kept
            ops.append([path, line])
    elif isinstance(built, dict) and isinstance(line, dict):
        ops.extend([[*path, key]] for key in built if key not in line)
        for key, value in line.items():
            if key not in built:
                ops.append([[*path, key], value])
            elif built[key] != value:
                _diff(built[key], value, [*path, key], ops, lost, summarizes)
    elif isinstance(built, list) and isinstance(line, list) and len(built) == len(line):
        for i, (a, b) in enumerate(zip(built, line, strict=True)):
            if a != b:
                _diff(a, b, [*path, i], ops, lost, summarizes)
    elif not same(_unmarked(built), line):
        ops.append([path, line])


def _unmarked(value: Any) -> Any:
    if isinstance(value, Bounded):
        return value.summary
    if isinstance(value, dict):
        return {k: _unmarked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unmarked(v) for v in value]
    return value


def line_patch(
    built: dict[str, Any], line: dict[str, Any], summarizes: SummaryCheck | None = None
) -> tuple[list[list[Any]], dict[str, int]]:
    """The edits that make ``built`` (``rebuild(..., mark_bounded=True)``) the ``line``, and
    the values only a bounded summary keeps, counted by generic JSON path.
    ``summarizes(value, summary)``: whether ``summary`` is what bounding made of the line's
    ``value`` (default: always), since a hook listed twice may hold another value in its
    other listing."""
    ops: list[list[Any]] = []
    lost: dict[str, int] = {}
    try:
        if built != line:
            _diff(built, line, [], ops, lost, summarizes or (lambda value, summary: True))
    except RecursionError:  # nested deeper than the walk goes: the whole line, as it was
        return [[[], line]], {}
    # in path order, not the line's key order: a line written with its keys in another order
    # (an export's) gets the same patch (no two edits touch one path, so any order applies)
    if len(ops) > 1:
        ops.sort(key=lambda op: path_text(op[0]))
    return ops, lost


def path_text(path: Path) -> str:
    """``json.dumps(path)`` for a path of strings and ints, the text the patch's edits are
    sorted by: the same characters (ASCII escapes, ``", "``), without the encoder's set-up
    per call, which was most of the sort's time."""
    # a step ``_diff`` did not make (neither str nor int) is as ``json.dumps`` has it
    steps = [
        _ascii(s) if type(s) is str else repr(s) if type(s) is int else json.dumps(s) for s in path
    ]
    return "[" + ", ".join(steps) + "]"


def apply_patch(built: dict[str, Any], patch: Sequence[Sequence[Any]]) -> dict[str, Any]:
    """``built`` (``rebuild``) with its patch applied (in place, but for a whole-line patch)."""
    for op in patch:
        path = op[0]
        if not path:
            return op[1]
        node: Any = built
        for step in path[:-1]:
            node = node[step]
        if len(op) == 1:
            del node[path[-1]]
        else:
            node[path[-1]] = op[1]
    return built
