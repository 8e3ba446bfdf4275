"""The same episodes written other ways: in the capture project's later layout, as its
producer writes that layout (its own question ids and field order), and with the defects
every ingest path must account for."""

from __future__ import annotations

import copy
import random
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

V2_TRACE_RENAMES = {"execution_success": "success"}
# Fields of a seeds-layout trace the later capture code does not write (its ``TraceDict``).
V2_TRACE_ABSENT = ("total_turns", "archived_turn_count")


def without_v2_fields(episode: dict) -> dict:
    """The seeds-layout episode as the later layout can express it: no
    ``conversation_for_sft`` and no ``rl_verification_data``."""
    drop = ("conversation_for_sft", "rl_verification_data")
    return {k: v for k, v in episode.items() if k not in drop}


def to_capture_v2(episode: dict) -> dict:
    """``episode`` in the capture project's later layout (``schemas.layouts.CAPTURE_V2``):
    ``gold_trace``, ``triangulation``, a trace's ``success`` (without ``total_turns`` and
    ``archived_turn_count``); ``timing``, ``source`` and
    ``csv_source`` added; no ``conversation_for_sft`` or ``rl_verification_data``."""

    def trace(t: dict) -> dict:
        return {V2_TRACE_RENAMES.get(k, k): v for k, v in t.items() if k not in V2_TRACE_ABSENT}

    seeds = without_v2_fields(episode)
    rng = random.Random(episode["episode_id"])
    gold, runs = round(rng.uniform(2, 30), 2), [round(rng.uniform(2, 30), 2) for _ in range(3)]
    out = {
        "episode_id": seeds["episode_id"],
        "timestamp": seeds["timestamp"],
        "verified": seeds["verified"],
        "question": seeds["question"],
        "gold_trace": trace(seeds["teacher_gold_trace"]),
        "consistency_traces": [trace(t) for t in seeds["consistency_traces"]],
        "triangulation": seeds["triangulation_metadata"],
        "timing": {
            "gold_elapsed": gold,
            "consistency_elapsed": round(sum(runs), 2),
            "total_elapsed": round(gold + sum(runs), 2),
            "avg_elapsed": round((gold + sum(runs)) / 4, 2),
        },
        "source": "synthetic",
        "csv_source": _csv_source(seeds["teacher_gold_trace"]),
    }
    return out


def as_producer_writes(line: dict, index: int) -> dict:
    """A capture_v2 line as the capture project's producer writes it: its own question id
    (``syn_…`` for a question that knows its answer, ``llm_…`` otherwise) and the question
    metadata of that layout; every fourth verified episode is verified the producer's other
    way, against the question's ground truth, with no consistency traces."""
    out = copy.deepcopy(line)
    question, gold = out["question"], out["gold_trace"]
    stem = Path(out["csv_source"] or "data.csv").stem
    answer = gold.get("final_answer")
    by_ground_truth = out["verified"] and index % 4 == 0 and gold["final_answer_hash"]
    if by_ground_truth:
        question.update(ground_truth=answer, ground_truth_hash=gold["final_answer_hash"])
        question["ground_truth_hashes"] = [gold["final_answer_hash"]]
        out["consistency_traces"] = []
        out["triangulation"] = {
            "n_consistency_runs": 0,
            "n_consistency_succeeded": 0,
            "majority_answer_hash": gold["final_answer_hash"],
            "majority_count": 0,
            "gold_matches_majority": True,
        }
        out["source"] = "template"
    known = "ground_truth_hash" in question
    rng = random.Random(out["episode_id"])
    question["id"] = f"syn_{stem}_{rng.getrandbits(32):08x}" if known else f"llm_{stem}_{index:04d}"
    question.update(
        category=rng.choice(["aggregation", "filtering", "grouping", "statistics"]),
        tags=sorted(rng.sample(["count", "mean", "filter", "groupby", "sort", "join"], 2)),
        output_type=type(answer).__name__,
        output_schema=f"A JSON {type(answer).__name__}",
    )
    if known:
        question.update(template_name=f"{stem}_{question['category']}", template_params={"k": 1})
    return out


def _csv_source(trace: dict) -> str | None:
    """The data file the trace's code reads."""
    cells = [t["code"] for t in trace.get("turns") or []] or trace.get("code_cells") or []
    found = re.search(r"read_csv\('([^']+)'\)", "\n".join(cells))
    return found.group(1) if found else None


def with_defects(episodes: Iterable[dict]) -> list[Any]:
    """``episodes`` (at least 31) with the defects every ingest path must account for: a
    duplicate episode id (line 11), a line that is not JSON (21), a blank line (22), an
    integrity-check failure (``triangulation_mismatch``, 32) and unknown fields (last)."""
    records: list[Any] = list(episodes)
    records.insert(10, records[4])
    records.insert(20, b"{not json")
    records.insert(21, b"")
    broken = copy.deepcopy(records[30])
    broken["triangulation_metadata"]["majority_count"] += 1
    records.insert(31, broken | {"episode_id": "broken"})
    records.append(records[5] | {"episode_id": "unknown-fields", "zz_new": {"a": 1}})
    return records
