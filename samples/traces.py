"""A teacher run of a problem as a trace: its own chunking of the steps into turns, errors it
recovers from (a correction with a code diff), a failed run's last error, and the hooks of
each step, in both trace forms (flat ``code_cells`` or ``turns``)."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from samples.datasets import Dataset
from samples.problems import Problem, Variant
from samples.steps import Step, inspect_step

_SITE = "/usr/local/lib/python3.11/site-packages/pandas"


@dataclass(frozen=True)
class _Break:
    """An error a first attempt at a line can hit, and the reasoning that fixes it."""

    line: str
    error_type: str
    message: str
    frames: str  # library frames between the cell and the raise
    fix: str


@dataclass
class Turn:
    reasoning: str
    code: str
    success: bool
    stdout: str
    stderr: str
    steps: tuple[Step, ...]  # the hooks this turn produced
    submitted: bool = False
    answer: Any = None
    answer_hash: str | None = None
    correction: dict[str, Any] | None = None


@dataclass(frozen=True)
class Outcome:
    kind: str  # correct | wrong | failed
    variant: Variant | None = None


def _breaks(step: Step, ds: Dataset) -> list[_Break]:
    out: list[_Break] = []
    if step.code.startswith("df = pd.read_csv("):
        bad = ds.file.capitalize()
        out.append(
            _Break(
                step.code.replace(ds.file, bad),
                "FileNotFoundError",
                f"[Errno 2] No such file or directory: '{bad}'",
                f'  File "{_SITE}/io/parsers/readers.py", line 1026, in read_csv\n'
                "    return _read(filepath_or_buffer, kwds)\n",
                f"The file name is lower-case: '{ds.file}'.",
            )
        )
        return out
    for col in ds.columns:
        if f"'{col.name}'" in step.code:
            bad = _miscase(col.name)
            out.append(
                _Break(
                    step.code.replace(f"'{col.name}'", f"'{bad}'", 1),
                    "KeyError",
                    repr(bad),
                    f'  File "{_SITE}/core/frame.py", line 4102, in __getitem__\n'
                    "    indexer = self.columns.get_loc(key)\n"
                    f'  File "{_SITE}/core/indexes/base.py", line 3812, in get_loc\n'
                    "    raise KeyError(key) from err\n",
                    f"Column names are case-sensitive: the column is '{col.name}', not '{bad}'.",
                )
            )
            break
    lhs, sep, rhs = step.code.partition(" = ")
    for dep in step.deps:
        if re.search(rf"\b{re.escape(dep)}\b", rhs):
            bad = "data" if dep == "df" else (dep[:-1] if dep.endswith("s") else dep + "s")
            line = lhs + sep + re.sub(rf"\b{re.escape(dep)}\b", bad, rhs, count=1)
            out.append(
                _Break(
                    line,
                    "NameError",
                    f"name '{bad}' is not defined",
                    "",
                    f"`{bad}` was never defined; the variable is `{dep}`.",
                )
            )
            break
    if "quantile(0.75)" in step.code:
        out.append(
            _Break(
                step.code.replace("quantile(0.75)", "quantile(75)"),
                "ValueError",
                "percentiles should all be in the interval [0, 1]",
                f'  File "{_SITE}/core/series.py", line 2769, in quantile\n'
                "    result = df.quantile(q=q, interpolation=interpolation, numeric_only=False)\n",
                "quantile() takes a fraction, so the 75th percentile is quantile(0.75).",
            )
        )
    filtered = re.fullmatch(r"(\w+ = df\[)(df\['[^']+'\]) == ('[^']*')\]", step.code)
    if filtered:
        head, column, value = filtered.groups()
        out.append(
            _Break(
                f"{head}{column} == {value} and {column}.notna()]",
                "ValueError",
                "The truth value of a Series is ambiguous. "
                "Use a.empty, a.bool(), a.item(), a.any() or a.all().",
                f'  File "{_SITE}/core/generic.py", line 1577, in __nonzero__\n'
                "    raise ValueError(\n",
                "`and` does not work element-wise on a Series, and the notna() test is "
                "redundant anyway: equality with a value already excludes missing rows.",
            )
        )
    if "int(mask.sum())" in step.code:
        out.append(
            _Break(
                step.code.replace("int(mask.sum())", "int(mask)"),
                "TypeError",
                "cannot convert the series to <class 'int'>",
                f'  File "{_SITE}/core/series.py", line 248, in wrapper\n'
                '    raise TypeError(f"cannot convert the series to {converter}")\n',
                "mask is a boolean Series; sum it first, then convert the count to int.",
            )
        )
    if ".idxmax()" in step.code:
        out.append(
            _Break(
                step.code.replace(".idxmax()", ".idxmax(axis=1)"),
                "ValueError",
                "No axis named 1 for object type Series",
                f'  File "{_SITE}/core/generic.py", line 554, in _get_axis_number\n'
                '    raise ValueError(f"No axis named {axis} for object type {cls.__name__}")\n',
                "A Series only has axis 0; idxmax() needs no axis argument.",
            )
        )
    return out


def _pick(options: list[_Break], rng: random.Random) -> _Break:
    # Typos (KeyError, NameError) fit almost any line; the rarer, line-specific errors get
    # more weight so that every kind shows up in a small sample.
    weights = [1 if b.error_type in ("KeyError", "NameError") else 3 for b in options]
    return rng.choices(options, weights)[0]


def _miscase(name: str) -> str:
    for candidate in (name.lower(), name.capitalize(), name.upper()):
        if candidate != name:
            return candidate
    return name + "_"


def _lines(chunk: Sequence[Step], first_line: str | None = None) -> list[str]:
    lines = ["import pandas as pd"] if chunk[0].var == "df" and not chunk[0].deps else []
    for i, step in enumerate(chunk):
        lines.append(first_line if i == 0 and first_line is not None else step.code)
        if step.show:
            lines.append(step.show)
    return lines


def _ok_turn(chunk: Sequence[Step], submit: Step | None, answer: Any) -> Turn:
    lines, out = _lines(chunk), [s.out for s in chunk]
    if submit is not None:
        lines.append(f"submit({submit.var})")
        out.append("Answer submitted.")
    reasoning = " ".join(s.reasoning for s in chunk)
    if submit is not None:
        reasoning += " Then submit it."
    return Turn(
        reasoning,
        "\n".join(lines),
        True,
        "\n".join(out),
        "",
        tuple(chunk),
        submitted=submit is not None,
        answer=answer,
        answer_hash=submit.hash if submit is not None else None,
    )


def _failed_turn(chunk: Sequence[Step], brk: _Break, index: int, reasoning: str) -> Turn:
    lines = _lines(chunk, brk.line)
    lineno = lines.index(brk.line) + 1
    stderr = (
        "Traceback (most recent call last):\n"
        f'  File "<cell-{index}>", line {lineno}, in <module>\n'
        f"    {brk.line}\n{brk.frames}{brk.error_type}: {brk.message}\n"
    )
    return Turn(reasoning, "\n".join(lines), False, "", stderr, ())


def _chunks(steps: Sequence[Step], inspect: Step | None, rng: random.Random) -> list[list[Step]]:
    chunks = [[steps[0], inspect] if inspect is not None else [steps[0]]]
    middle = list(steps[1:-1])
    while middle:
        size = 1 if len(middle) == 1 or rng.random() < 0.45 else 2
        chunks.append(middle[:size])
        middle = middle[size:]
    if len(chunks) > 1 and rng.random() < 0.25:
        chunks[-1].append(steps[-1])
    else:
        chunks.append([steps[-1]])
    return chunks


def run_turns(
    problem: Problem, outcome: Outcome, rng: random.Random, fix_rate: float
) -> list[Turn]:
    """The turns of one teacher run: its own chunking, maybe an error it recovers from,
    and for a failed run the error it does not recover from."""
    steps = list(problem.steps)
    answer = problem.answer
    if outcome.variant is not None:
        steps[-1], answer = outcome.variant.step, outcome.variant.answer
    inspect = inspect_step(problem.dataset) if rng.random() < 0.15 else None
    chunks = _chunks(steps, inspect, rng)
    separate_submit = rng.random() < 0.35
    fail_at = fix_at = -1
    if outcome.kind == "failed":
        fail_at = 0 if rng.random() < 0.1 else rng.randrange(1, len(chunks))
    elif rng.random() < fix_rate:
        fix_at = rng.randrange(1, len(chunks))
    turns: list[Turn] = []
    for ci, chunk in enumerate(chunks):
        if ci == fail_at:
            _fail(turns, chunk, problem.dataset, rng)
            return turns
        last = ci == len(chunks) - 1
        submit = steps[-1] if last and not separate_submit else None
        turn = _ok_turn(chunk, submit, answer if submit else None)
        if ci == fix_at:
            _first_attempt_fails(turns, turn, chunk, problem.dataset, rng)
        turns.append(turn)
    if separate_submit:
        var = steps[-1].var
        turns.append(
            Turn(
                "The answer is ready; submitting it.",
                f"submit({var})",
                True,
                "Answer submitted.",
                "",
                (),
                submitted=True,
                answer=answer,
                answer_hash=steps[-1].hash,
            )
        )
    return turns


def _fail(turns: list[Turn], chunk: Sequence[Step], ds: Dataset, rng: random.Random) -> None:
    options = _breaks(chunk[0], ds)
    reasoning = " ".join(s.reasoning for s in chunk)
    first = _pick(options, rng)
    turns.append(_failed_turn(chunk, first, len(turns), reasoning))
    others = [b for b in options if b.error_type != first.error_type]
    if others and rng.random() < 0.4:
        second = rng.choice(others)
        turns.append(_failed_turn(chunk, second, len(turns), first.fix))


def _first_attempt_fails(
    turns: list[Turn], fixed: Turn, chunk: Sequence[Step], ds: Dataset, rng: random.Random
) -> None:
    """Append a failed first attempt at ``chunk``; ``fixed`` becomes its correction."""
    brk = _pick(_breaks(chunk[0], ds), rng)
    reasoning = " ".join(s.reasoning for s in chunk)
    failed_index = len(turns)
    turns.append(_failed_turn(chunk, brk, failed_index, reasoning))
    fixed.reasoning = brk.fix + " " + fixed.reasoning
    fixed.correction = {
        "corrects_turn": failed_index,
        "error_type": brk.error_type,
        "error_message": brk.message,
        "attempts_since_error": 1,
        "code_diff": {"removed_lines": [brk.line], "added_lines": [chunk[0].code]},
    }


def _hook(step: Step, with_value: bool, described: bool) -> dict[str, Any]:
    hook = {
        "code_line": step.code,
        "variable_name": step.var,
        "value_hash": step.hash,
        "description": step.description if described else None,
        "depends_on": list(step.deps),
    }
    if with_value:
        hook["value"] = step.value
    return hook


def trace_record(
    turns: list[Turn], form: str, rng: random.Random, *, described: bool, extras: bool
) -> dict[str, Any]:
    """A trace dict; hook descriptions are authored for the gold run only (``described``)."""
    submit_index, submit = next(((i, t) for i, t in enumerate(turns) if t.submitted), (0, None))
    success = submit is not None
    trace: dict[str, Any] = {"code_cells": [t.code for t in turns]}
    if form == "turns":
        trace["turns"] = [_turn_dict(i, t, described) for i, t in enumerate(turns)]
        if rng.random() < 0.8:  # most turn-form captures list the code only in turns
            del trace["code_cells"]
    trace["final_answer"] = submit.answer if submit else None
    trace["final_answer_hash"] = submit.answer_hash if submit else None
    trace["execution_success"] = success
    listed = [s for t in turns for s in t.steps]
    # Some turn-form captures also list every hook at trace level, in the same order.
    trace_level = form == "flat" or rng.random() < 0.25
    trace["hooks"] = [_hook(s, False, described) for s in listed] if trace_level else []
    if submit is not None:
        trace["submission_metadata"] = {
            "answer_type": type(submit.answer).__name__,
            "submit_turn": submit_index,
            "errors_before_submit": sum(not t.success for t in turns),
        }
    else:
        last_error = turns[-1].stderr.rstrip().rsplit("\n", 1)[-1].split(":", 1)[0]
        trace["submission_metadata"] = {"termination": "error", "last_error": last_error}
    trace["total_turns"] = len(turns)
    trace["archived_turn_count"] = 0
    if extras:
        trace["sampling"] = {"temperature": 0.7, "top_p": 0.95}
    return trace


def _turn_dict(index: int, turn: Turn, described: bool) -> dict[str, Any]:
    execution: dict[str, Any] = {
        "success": turn.success,
        "stdout": turn.stdout,
        "stderr": turn.stderr,
        "hooks": [_hook(s, True, described) for s in turn.steps],
    }
    if turn.submitted:
        execution["submitted_answer"] = turn.answer
    return {
        "turn_index": index,
        "reasoning": turn.reasoning,
        "code": turn.code,
        "execution": execution,
        "correction": turn.correction,
    }
