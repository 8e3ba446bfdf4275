"""Episode line layouts: the seeds' and the capture project's later one, mapped into one model.

The episode model (``schemas.episode``) is the seeds' layout. Every other layout is one
declared ``Layout``: the top-level key that recognises it, the renames that map it onto the
model (at the top level and in every trace), and the keys it must carry. A line is mapped
before validation, so both layouts become the same tables, and the ``episodes`` table
records which layout each row came from. Adding a layout is one more entry in ``LAYOUTS``.

The later layout (``capture_v2``) renames ``teacher_gold_trace`` → ``gold_trace``,
``triangulation_metadata`` → ``triangulation`` and a trace's ``execution_success`` →
``success``; it adds ``timing`` and ``source`` (kept as extra fields) and ``csv_source`` (a
field of both layouts: the capture code writes it in either) and has
no ``conversation_for_sft`` (``sft`` renders the gold trace) and no ``rl_verification_data``
(the expected answer is the gold trace's). Its producer names questions its own way
(``llm_ds_0001``, ``syn_…``, ``prog_…`` or null) and verifies questions that know their
answer against that ground truth, with no consistency traces; both are declared below.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

TRACE_KEYS = ("teacher_gold_trace", "consistency_traces")  # after the top-level renames


@dataclass(frozen=True)
class Layout:
    name: str
    marker: str  # a top-level key only this layout has
    required: tuple[str, ...]  # top-level keys a line of this layout must carry (the model's)
    renames: Mapping[str, str] = field(default_factory=dict)  # its key -> the model's
    trace_renames: Mapping[str, str] = field(default_factory=dict)  # in every trace
    # The producer names questions its own way (``llm_ds_0001``): a question id that is not
    # the content address is kept as ``capture_id`` and the content address becomes ``id``.
    # (A null or absent id means the content address in every layout: the seeds define the
    # id as that address, and their capture code wrote null where it had not computed it.)
    free_question_id: bool = False
    # With no consistency traces, ``verified`` means the gold answer matched the
    # question's ground truth (the capture side's ground-truth strategy).
    ground_truth_evidence: bool = False
    # Its capture code wrote the episode's ``verified`` (a match within a float tolerance)
    # as ``gold_matches_majority``, beside a majority counted by exact hash (2025-12-21).
    verified_as_gold_matches: bool = False

    def to_model(self, line: dict[str, Any]) -> dict[str, Any]:
        """``line`` with this layout's keys renamed to the model's (a new dict)."""
        if not self.renames and not self.trace_renames:
            return line
        out = {self.renames.get(k, k): v for k, v in line.items()}
        for key in TRACE_KEYS:
            traces = out.get(key)
            if isinstance(traces, dict):
                out[key] = self._trace(traces)
            elif isinstance(traces, list):
                out[key] = [self._trace(t) if isinstance(t, dict) else t for t in traces]
        return out

    def conflicts(self, line: dict[str, Any]) -> list[tuple[str, str]]:
        """(JSON path, message) for each key of ``line`` that is the model's name of a key this
        layout renames (``triangulation_metadata`` in a ``capture_v2`` line): renamed, the two
        would collide, and which one the line means is not for the builder to guess."""
        found = []
        for theirs, ours in self.renames.items():
            if ours in line:
                found.append((f"$.{ours}", self._said(ours, theirs)))
        for theirs, ours in self.trace_renames.items():
            for path, trace in self._traces_of(line):
                if ours in trace:
                    found.append((f"{path}.{ours}", self._said(ours, theirs)))
        return found

    def _said(self, ours: str, theirs: str) -> str:
        return (
            f"{ours!r} is the seeds' name of {theirs!r}, and this is a {self.name} line: name it "
            f"{theirs!r} (once)"
        )

    def _traces_of(self, line: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """The line's traces under their own keys, with their JSON paths."""
        top = {ours: theirs for theirs, ours in self.renames.items()}
        found = []
        for key in TRACE_KEYS:
            spelled = top.get(key, key)
            traces = line.get(spelled)
            if isinstance(traces, dict):
                found.append((f"$.{spelled}", traces))
            elif isinstance(traces, list):
                found += [
                    (f"$.{spelled}[{i}]", t) for i, t in enumerate(traces) if isinstance(t, dict)
                ]
        return found

    def _trace(self, trace: dict[str, Any], renames: Mapping[str, str] | None = None) -> dict:
        renames = self.trace_renames if renames is None else renames
        return {renames.get(k, k): v for k, v in trace.items()}

    def to_line(self, model: dict[str, Any]) -> dict[str, Any]:
        """The inverse of ``to_model``: the model's keys as this layout spells them."""
        if not self.renames and not self.trace_renames:
            return model
        back = {ours: theirs for theirs, ours in self.trace_renames.items()}
        out = dict(model)
        for key in TRACE_KEYS:
            traces = out.get(key)
            if isinstance(traces, dict):
                out[key] = self._trace(traces, back)
            elif isinstance(traces, list):
                out[key] = [self._trace(t, back) if isinstance(t, dict) else t for t in traces]
        top = {ours: theirs for theirs, ours in self.renames.items()}
        return {top.get(k, k): v for k, v in out.items()}


SEEDS = Layout(
    "seeds",
    marker="teacher_gold_trace",
    required=("episode_id", "verified", "question", "teacher_gold_trace"),
    verified_as_gold_matches=True,
)
CAPTURE_V2 = Layout(
    "capture_v2",
    marker="gold_trace",
    required=("episode_id", "verified", "question", "gold_trace"),
    renames={"gold_trace": "teacher_gold_trace", "triangulation": "triangulation_metadata"},
    trace_renames={"success": "execution_success"},
    free_question_id=True,
    ground_truth_evidence=True,
    # its episode writer (``episode_factory``) sets ``gold_matches_majority`` to the
    # verification's result, which compares answers by value within a tolerance
    verified_as_gold_matches=True,
)
LAYOUTS: tuple[Layout, ...] = (SEEDS, CAPTURE_V2)
# A question bank as the capture side writes it (``builder.banks``) names two of the
# question's keys its own way: its key -> the model's, used where the model's is absent.
BANK_RENAMES = {"question": "question_text", "_ground_truth": "ground_truth"}
# Its later records may carry only a template's wording (``question_text`` null or blank):
# the capture side then asks, and writes into the episode, this one instead.
BANK_TEXT_FALLBACK = "question_mechanical"
# Its ``questions.json`` is one JSON document that lists the questions under this key.
BANK_LIST_KEY = "questions"
LAYOUT_NAMES = tuple(layout.name for layout in LAYOUTS)
LAYOUTS_BY_NAME = {layout.name: layout for layout in LAYOUTS}


_TRACE_PATH = re.compile(r"^\$\.(teacher_gold_trace|consistency_traces\[\d+\])\.(\w+)(.*)$")


def layout_path(name: str, path: str) -> str:
    """A JSON path into the model (``$.teacher_gold_trace.execution_success``) as the
    layout ``name`` spells it (``$.gold_trace.success``)."""
    layout = LAYOUTS_BY_NAME[name]
    back = {ours: theirs for theirs, ours in layout.trace_renames.items()}
    trace = _TRACE_PATH.match(path)
    if trace is not None and trace.group(2) in back:
        path = f"$.{trace.group(1)}.{back[trace.group(2)]}{trace.group(3)}"
    for theirs, ours in layout.renames.items():
        if path == f"$.{ours}" or path.startswith((f"$.{ours}.", f"$.{ours}[")):
            return f"$.{theirs}" + path[len(ours) + 2 :]
    return path


class NoLayout(ValueError):
    """A line that matches no layout: names the nearest one and what it lacks."""

    def __init__(self, message: str, missing: list[str]) -> None:
        super().__init__(message)
        self.missing = missing  # the nearest layout's required keys absent from the line


def recognise(line: dict[str, Any]) -> Layout:
    """The layout of a decoded line, by its marker key; else ``NoLayout``."""
    for layout in LAYOUTS:
        if layout.marker in line:
            return layout
    missing = {layout.name: [k for k in layout.required if k not in line] for layout in LAYOUTS}
    # Fewest required keys missing; on a tie, the layout whose own key names the line uses.
    nearest = min(
        LAYOUTS,
        key=lambda x: (len(missing[x.name]), -len(set(x.renames) & set(line))),
    )
    raise NoLayout(
        f"Field required: matches no episode layout ({', '.join(LAYOUT_NAMES)}); the "
        f"nearest, {nearest.name!r}, lacks {', '.join(missing[nearest.name])}" + _looks_like(line),
        missing[nearest.name],
    )


def _looks_like(line: dict[str, Any]) -> str:
    """What a line of no layout most likely is, when that is a known training row: the
    capture side also writes chat-format files (``messages``, ``system``) derived from its
    episodes, and those get passed as episodes by mistake."""
    if isinstance(line.get("messages"), list) and not any(k in line for k in TRACE_KEYS):
        return (
            "; the line looks like a chat-format training row (messages), not an episode: "
            "pass the episode files the capture side wrote"
        )
    return ""
