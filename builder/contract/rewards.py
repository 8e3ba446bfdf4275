"""Reward functions for training on the built data: the one comparison logic.

The ``prm_stepwise`` labels (``builder.derive.prm_stepwise``) call ``process_reward`` from
here, and training code calls it through the adapters below, so a label and a reward can
never disagree. This module imports only the standard library, ``builder.contract.hashing`` and
``builder.contract.answers``: training code can import it without polars, pyarrow or datasets.

Hash scheme
    Every function takes ``precision``: ``None`` is the seeds' exact scheme, an int the
    capture contract's rounded one (``builder.contract.hashing``). Use the scheme of the build,
    which
    the ``rl`` config carries per row as ``hash_precision`` (the adapters below read it).

Outcome
    ``outcome_reward(answer, expected_hash, precision)`` is 1.0 when the capture side's hash
    of ``answer`` equals the expected hash, or is one of a list of accepted hashes (the
    ``rl`` config's ``accepted_answer_hashes``: a question may have several valid answers),
    else 0.0. ``answer`` is the live value (a pandas DataFrame, a numpy scalar, ...), or a
    ``builder.contract.hashing.Submitted`` from another process, hashed as the capture side hashes a
    submitted answer: written by its ``submit()`` as JSON and hashed as read back
    (``answer_hashes``), so a Series with integer labels hashes with string keys. A value the
    capture side could not submit scores 0.0. Given a ``tolerance`` and the expected answer,
    an answer that matches it by value within the tolerance (``builder.contract.answers``: the
    capture
    code's comparison, ±0.1 there) scores 1.0 too; the ``rl`` rows carry the build's
    ``answer_tolerance`` (null: hashes only), which ``make_outcome_reward`` reads.

Process (the credit rule)
    Gold hooks ``g_0..g_{n-1}`` (the gold trace's, in its order) each have a name, a value
    hash and ``depends_on`` (names of other gold hooks); student hooks ``s_0..s_{m-1}`` are
    taken in the student's order. Walking the student hooks in order, a gold hook ``g`` is
    credited at the first position ``p`` where

    * ``s_p`` has ``g``'s value hash, and
    * every name in ``g.depends_on`` is the name of a gold hook credited at a position
      strictly before ``p`` (a name held by several gold hooks is satisfied by any of them).

    So a hook produced before (or without) one of its dependencies earns nothing at that
    position, and everything that depends on it, directly or transitively, loses its credit
    too unless the student produces it again in order. A name in ``depends_on`` that names no
    gold hook orders nothing and is left out: the frame the sandbox preloads (``df``), or a
    hook the capture lost with the cell that failed after it (the builder's
    ``hook_unknown_dependency`` check keeps a trace naming anything else out of training).
    Hooks on a cycle are never credited. One student hook may credit several gold hooks that
    share its hash (each still needs its dependencies credited strictly earlier).

    The dense reward is ``credited / n`` (0.0 when there are no gold hooks or no student
    hooks); a student whose hooks equal the gold hooks, in a gold order that lists every
    dependency before its dependents (the capture order does), scores 1.0.

    A student hook ``s_p`` is *matched* when some gold hook ``g`` with its hash has every
    dependency credited before ``p``: matched hooks are exactly those that earn (or would
    re-earn) a credit. ``prm_stepwise`` labels a step false when a hook attributed to it is
    not matched.

Hooks
    A hook is a mapping (or an object with these attributes): ``value_hash``; a name from
    ``name``, else ``variable_name``, else ``code_line`` (the builder's naming); and
    ``depends_on`` (a list of names, missing or None meaning none). A student hook may carry
    its live ``value`` instead of a ``value_hash``: it is hashed with ``precision`` as the
    capture side's ``hook()`` hashes it (``hook_hashes``). The
    ``rl`` config's
    ``gold_hooks`` rows (``{name, value_hash, depends_on}``) and the episode schema's hooks
    both qualify. A bare string is taken as a value hash. Student hooks are compared by hash
    only; their own names and ``depends_on`` are not used. A hook without a hash matches
    nothing.

GRPO-style adapters
    ``make_outcome_reward(run)`` and ``make_process_reward(run)`` return functions with the
    signature trainers such as TRL's ``GRPOTrainer`` call: ``(prompts, completions,
    **kwargs)`` where the keyword arguments carry the ``rl`` config's columns, one entry per
    completion (``expected_final_answer_hash: list[str]``, ``gold_hooks:
    list[list[dict]]``, ...), and the result is one float per completion. ``run(completion)``
    is yours: it executes a completion in your environment and returns ``{"answer": ...,
    "hooks": [...]}`` (leave out ``"answer"`` when nothing was submitted; that scores 0.0).
    Each adapter calls ``run`` once per completion; memoize it if executing twice is costly.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from builder.contract.answers import answers_match
from builder.contract.hashing import answer_hashes, hook_hashes, submitted_values

__all__ = [
    "ProcessReward",
    "RewardFunction",
    "make_outcome_reward",
    "make_process_reward",
    "outcome_reward",
    "process_reward",
]

RewardFunction = Callable[..., list[float]]
NO_ANSWER: Any = object()  # ``outcome_reward``'s ``expected`` when none is given
ROW = "row"  # ``make_outcome_reward``'s tolerance: the ``rl`` row's ``answer_tolerance``
Run = Callable[..., Mapping[str, Any]]  # run(completion) or run(completion, csv_source=...)


def _with_source(run: Run) -> Callable[[Any, Any], Mapping[str, Any]]:
    """``run(completion)``, or ``run(completion, csv_source=...)`` with the row's data file
    (the ``rl`` column) when ``run`` takes a ``csv_source`` argument or ``**kwargs``."""
    try:
        params = inspect.signature(run).parameters.values()
    except (TypeError, ValueError):  # a builtin or C callable: no signature to read
        params = []  # type: ignore[assignment]
    if any(p.name == "csv_source" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return lambda completion, source: run(completion, csv_source=source)
    return lambda completion, source: run(completion)


@dataclass(frozen=True)
class ProcessReward:
    """``process_reward``'s result.

    ``credited[i]``: gold hook ``i`` earned its credit; ``credited_at[i]``: the student
    position where it did (None when it did not); ``matched[p]``: student hook ``p`` matched
    a gold hook in DAG order; ``reward``: credited gold hooks / gold hooks (0.0 when either
    list is empty).
    """

    reward: float
    credited: tuple[bool, ...]
    credited_at: tuple[int | None, ...]
    matched: tuple[bool, ...]

    def __float__(self) -> float:
        return self.reward


def _field(hook: Any, key: str) -> Any:
    if isinstance(hook, Mapping):
        return hook.get(key)
    return getattr(hook, key, None)


def hook_hash_set(hook: Any, precision: int | None = None) -> frozenset[str]:
    """The value hashes a hook may stand for: its ``value_hash`` (a bare string is one), else
    those of its live ``value`` (``hook_hashes``); empty when it has neither."""
    if isinstance(hook, str):
        return frozenset((hook,))
    digest = _field(hook, "value_hash")
    if digest is not None:
        return frozenset((digest,))
    return hook_hashes(_field(hook, "value"), precision) if _has_value(hook) else frozenset()


def _has_value(hook: Any) -> bool:
    return "value" in hook if isinstance(hook, Mapping) else hasattr(hook, "value")


def hook_name(hook: Any) -> str | None:
    """``name``, else ``variable_name`` (unless empty), else ``code_line``: the builder's
    naming."""
    if isinstance(hook, str):
        return None
    for key in ("name", "variable_name", "code_line"):
        value = _field(hook, key)
        if value is not None and (value != "" or key != "variable_name"):
            return value
    return None


def hook_depends_on(hook: Any) -> tuple[str, ...]:
    return () if isinstance(hook, str) else tuple(_field(hook, "depends_on") or ())


def outcome_reward(
    answer: Any,
    expected_hash: str | Iterable[str] | None,
    precision: int | None = None,
    expected: Any = NO_ANSWER,
    tolerance: float | None = None,
) -> float:
    """1.0 when the hash the capture side records for ``answer`` (``answer_hashes``) is
    ``expected_hash`` (or one of several accepted hashes: a question with several valid
    answers), or, given a ``tolerance`` and the ``expected`` answer (decoded JSON), when the
    answer as submitted matches it by value within the tolerance (``builder.contract.answers``, the
    capture code's comparison); else 0.0."""
    accepted = {expected_hash} if isinstance(expected_hash, str) else set(expected_hash or ())
    if accepted and answer_hashes(answer, precision) & accepted:
        return 1.0
    if tolerance is None or expected is NO_ANSWER:
        return 0.0
    read = submitted_values(answer, precision)
    return 1.0 if any(answers_match(value, expected, tolerance) for value in read) else 0.0


def process_reward(
    student_hooks: Iterable[Any], gold_hooks: Iterable[Any], precision: int | None = None
) -> ProcessReward:
    """Per-gold-hook credit in DAG order and the dense reward (rule: module docstring)."""
    student = [hook_hash_set(h, precision) for h in student_hooks]
    gold = list(gold_hooks)
    hashes = [hook_hash_set(g) for g in gold]
    names = [hook_name(g) for g in gold]
    named = {n for n in names if n is not None}
    deps = [tuple(d for d in hook_depends_on(g) if d in named) for g in gold]
    by_hash: dict[str, list[int]] = {}
    for i, hs in enumerate(hashes):
        for h in hs:
            by_hash.setdefault(h, []).append(i)
    credited_at: list[int | None] = [None] * len(gold)
    done: set[str] = set()  # names of gold hooks credited at positions before the current one
    matched: list[bool] = []
    for p, hs in enumerate(student):
        found = sorted({i for h in hs for i in by_hash.get(h, ())})
        ready = [i for i in found if set(deps[i]) <= done]
        matched.append(bool(ready))
        for i in ready:
            if credited_at[i] is None:
                credited_at[i] = p
        # Credits at p satisfy dependencies from p + 1 on, never at p itself.
        done.update(names[i] for i in ready if names[i] is not None)
    credited = tuple(at is not None for at in credited_at)
    reward = sum(credited) / len(gold) if gold and student else 0.0
    return ProcessReward(reward, credited, tuple(credited_at), tuple(matched))


def _column(kwargs: Mapping[str, Any], name: str, n: int, adapter: str) -> Sequence[Any]:
    if name not in kwargs:
        raise KeyError(
            f"{adapter}: the trainer passed no {name!r} column; train on the 'rl' config, "
            f"whose columns the trainer forwards as keyword arguments"
        )
    values = kwargs[name]
    if len(values) != n:
        raise ValueError(f"{adapter}: {len(values)} values of {name!r} for {n} completions")
    return values


def _schemes(kwargs: Mapping[str, Any], n: int, adapter: str) -> Sequence[int | None]:
    """The rows' ``hash_precision`` (builds before it existed hashed exactly)."""
    if "hash_precision" not in kwargs:
        return [None] * n
    return _column(kwargs, "hash_precision", n, adapter)


def make_outcome_reward(
    run: Run, name: str = "outcome_reward", tolerance: float | str | None = ROW
) -> RewardFunction:
    """A ``(prompts, completions, **kwargs) -> list[float]`` reward: ``outcome_reward`` of
    ``run(completion)["answer"]`` against the row's ``accepted_answer_hashes`` (builds
    before that column: its ``expected_final_answer_hash``) and, by value, its
    ``expected_final_answer`` within ``tolerance``: the row's ``answer_tolerance`` (``ROW``,
    the default: null, or a build before that column, compares hashes only), a number, or
    None for hashes only. A ``run`` that takes ``csv_source`` gets the row's data file."""
    call = _with_source(run)

    def reward(prompts: Any = None, completions: Sequence[Any] = (), **kwargs: Any) -> list[float]:
        n = len(completions)
        column = (
            "accepted_answer_hashes"
            if "accepted_answer_hashes" in kwargs
            else "expected_final_answer_hash"
        )
        expected = _column(kwargs, column, n, name)
        schemes = _schemes(kwargs, n, name)
        sources = kwargs.get("csv_source") or [None] * n
        tolerances = _tolerances(kwargs, n, name, tolerance)
        answers = kwargs.get("expected_final_answer") or [None] * n
        out = []
        for completion, expected_hash, precision, source, within, answer in zip(
            completions, expected, schemes, sources, tolerances, answers, strict=True
        ):
            result = call(completion, source)
            if "answer" not in result:
                out.append(0.0)
                continue
            by_value = within is not None and answer is not None
            value = json.loads(answer) if by_value else NO_ANSWER
            out.append(outcome_reward(result["answer"], expected_hash, precision, value, within))
        return out

    reward.__name__ = reward.__qualname__ = name
    return reward


def _tolerances(
    kwargs: Mapping[str, Any], n: int, adapter: str, tolerance: float | str | None
) -> Sequence[float | None]:
    if tolerance != ROW:
        return [tolerance] * n  # type: ignore[list-item]
    if "answer_tolerance" not in kwargs:  # a build before the column: by hash only
        return [None] * n
    return _column(kwargs, "answer_tolerance", n, adapter)


def make_process_reward(run: Run, name: str = "process_reward") -> RewardFunction:
    """A ``(prompts, completions, **kwargs) -> list[float]`` reward: the dense
    ``process_reward`` of ``run(completion)["hooks"]`` against the row's ``gold_hooks``. A
    ``run`` that takes ``csv_source`` gets the row's data file."""
    call = _with_source(run)

    def reward(prompts: Any = None, completions: Sequence[Any] = (), **kwargs: Any) -> list[float]:
        gold = _column(kwargs, "gold_hooks", len(completions), name)
        schemes = _schemes(kwargs, len(completions), name)
        sources = kwargs.get("csv_source") or [None] * len(completions)
        out = []
        for completion, gold_hooks, precision, source in zip(
            completions, gold, schemes, sources, strict=True
        ):
            hooks = call(completion, source).get("hooks") or ()
            out.append(process_reward(hooks, gold_hooks or (), precision).reward)
        return out

    reward.__name__ = reward.__qualname__ = name
    return reward
