"""The hash scheme of a build: ``[hashing] precision`` / ``--hash-precision``, recomputed
hashes under it, the ``hash_scheme_mismatch`` check, the manifest, ``rl`` rows and rewards;
the capture code's first (pickle) scheme recognised."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest

from builder.cli.summary import hash_scheme_warning, pickle_scheme_warning
from builder.config import BuildConfig, ConfigError, load_config
from builder.contract.hashing import pickle_hash, value_hash
from builder.contract.rewards import make_outcome_reward, make_process_reward, outcome_reward
from builder.normalize import checks
from builder.pipeline import build
from schemas import vocabulary

ROOT = Path(__file__).resolve().parents[3]
ANSWER = 54.321  # hashes differently under the exact and the rounded scheme
HASH_KEYS = {"final_answer_hash", "majority_answer_hash", "expected_final_answer_hash"}


def with_answer_hash(record: Any, old: str, new: str | None) -> Any:
    """``record`` with every answer hash ``old`` replaced by ``new``."""
    if isinstance(record, dict):
        return {
            k: new if k in HASH_KEYS and v == old else with_answer_hash(v, old, new)
            for k, v in record.items()
        }
    if isinstance(record, list):
        return [with_answer_hash(v, old, new) for v in record]
    return record


def rehashed(record: Any, precision: int | None) -> Any:
    """``record`` with every answer hash of ``ANSWER`` recomputed under ``precision``."""
    return with_answer_hash(record, value_hash(ANSWER), value_hash(ANSWER, precision))


def episodes(make: SimpleNamespace, n: int, precision: int | None) -> list[bytes]:
    out = []
    for i in range(n):
        trace = make.turns_trace(ANSWER)
        flat = [make.flat_trace(ANSWER), make.flat_trace(ANSWER)]
        q = make.question(f"Question {i}: what is the mean price?")
        record = make.episode(f"ep-{i}", q=q, gold=trace, consistency=flat)
        out.append(make.line(rehashed(record, precision)))
    return out


def build_once(tmp: Path, lines: list[bytes], **config: Any) -> dict[str, Any]:
    path = tmp / "episodes.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    out = tmp / "dataset"
    build(BuildConfig(episodes=(str(path),), out=out, rejects=tmp / "r.jsonl", **config))
    return json.loads((out / "manifest.json").read_text())


@pytest.mark.parametrize("precision", [None, 2])
def test_a_build_with_the_capture_scheme_passes_every_hash_check(
    make: SimpleNamespace, tmp_path: Path, precision: int | None
) -> None:
    manifest = build_once(tmp_path, episodes(make, 6, precision), hash_precision=precision)
    assert manifest["checks"]["episodes_by_kind"] == {}
    assert manifest["hashing"] == {
        "scheme": "exact" if precision is None else "rounded",
        "precision": precision,
    }
    assert manifest["options"]["hash_precision"] == precision
    assert hash_scheme_warning(manifest) is None
    import pyarrow.parquet as pq

    rl = pq.read_table(tmp_path / "dataset" / "rl").to_pylist()
    assert rl and {row["hash_precision"] for row in rl} == {precision}
    card = (tmp_path / "dataset" / "README.md").read_text()
    assert ("rounded to 2 decimal places" in card) == (precision == 2)


def test_the_wrong_scheme_is_named_in_the_checks_and_the_summary(
    make: SimpleNamespace, tmp_path: Path
) -> None:
    manifest = build_once(tmp_path, episodes(make, 6, 2))  # captured rounded, built exact
    by_kind = manifest["checks"]["episodes_by_kind"]
    assert by_kind == {vocabulary.HASH_SCHEME_MISMATCH: 6}
    assert manifest["training_exclusions"]["failed_checks"] == 6
    warning = hash_scheme_warning(manifest)
    assert warning is not None and "--hash-precision 2" in warning


# Answers and their hashes from an episode file the capture code wrote with its first scheme
# (its repository's ``episodes/episodes.jsonl``, December 2025), the answers as the lines
# hold them: hashes computed by the capture code itself.
PICKLE_VECTORS = [
    ("numeric + categorical", "641d093004343888"),
    (0.7149499284692418, "60ccaf0062a92bc8"),
    (["INTERNODE_26"], "c8bb4eb8f6bdbea3"),
    ({"p_value": 0.0, "decision": "significant", "answer": "Yes"}, "a6fe9d8f634da8e7"),
]


@pytest.mark.parametrize(("answer", "captured"), PICKLE_VECTORS)
def test_pickle_hash_is_the_capture_codes_first_scheme(answer: Any, captured: str) -> None:
    assert pickle_hash(answer) == captured
    assert captured not in (value_hash(answer), value_hash(answer, ROUNDED))


ROUNDED = checks.ROUNDED_PRECISION


def repickled(record: Any, answer: Any) -> Any:
    """``record`` with every answer hash of ``answer`` made by the first scheme."""
    return with_answer_hash(record, value_hash(answer), pickle_hash(answer))


def test_answers_hashed_by_the_first_scheme_are_named_in_the_checks_and_the_summary(
    make: SimpleNamespace, tmp_path: Path
) -> None:
    answer = {"p_value": 0.0, "decision": "significant", "answer": "Yes"}  # keys unsorted
    lines = []
    for i in range(4):
        consistency = [make.flat_trace(answer), make.flat_trace(answer)]
        q = make.question(f"Question {i}: is the effect significant?")
        record = make.episode(
            f"ep-{i}", q=q, gold=make.turns_trace(answer), consistency=consistency
        )
        lines.append(make.line(repickled(record, answer)))
    manifest = build_once(tmp_path, lines)
    assert manifest["checks"]["episodes_by_kind"] == {vocabulary.PICKLE_HASH_SCHEME: 4}
    assert manifest["training_exclusions"]["failed_checks"] == 4
    assert hash_scheme_warning(manifest) is None
    warning = pickle_scheme_warning(manifest)
    assert warning is not None and warning.startswith("4 episodes")


def test_the_config_and_the_flag_set_the_scheme(tmp_path: Path) -> None:
    toml = tmp_path / "dataset.toml"
    toml.write_text("[hashing]\nprecision = 2\n")
    assert load_config(toml).hash_precision == 2
    toml.write_text('[hashing]\nprecision = "exact"\n')
    assert load_config(toml).hash_precision is None
    for bad in ('"two"', "-1", "true", "2.5"):
        toml.write_text(f"[hashing]\nprecision = {bad}\n")
        with pytest.raises(ConfigError, match="precision"):
            load_config(toml)


@pytest.mark.parametrize(("flag", "exit_code"), [("exact", 0), ("2", 0), ("two", 1)])
def test_the_hash_precision_flag(tmp_path: Path, flag: str, exit_code: int) -> None:
    (tmp_path / "dataset.toml").write_text("[hashing]\nprecision = 2\n")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "builder",
            "build",
            "--episodes",
            str(ROOT / "data/episodes/*.jsonl"),
            "--out",
            "ds",
            "--no-progress",
            "--hash-precision",
            flag,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert result.returncode == exit_code, result.stderr
    if exit_code == 0:  # the flag overrides the config, "exact" included
        manifest = json.loads((tmp_path / "ds/manifest.json").read_text())
        assert manifest["hashing"]["precision"] == (None if flag == "exact" else 2)
    else:
        assert "--hash-precision" in result.stderr and "Traceback" not in result.stderr


# ---------------------------------------------------------------- rewards, live values

LIVE = [
    (pd.DataFrame({"a": [5]}), 5),
    (pd.DataFrame({"a": [1, 2]}, index=["x", "y"]), {"x": 1, "y": 2}),
    (pd.DataFrame({"k": ["x", "y"], "v": [1.5, 2.0]}), {"x": 1.5, "y": 2.0}),
    (pd.Series([3, 1], index=["m", "f"]), {"f": 1, "m": 3}),
    (pd.Series([1.25, 2.5]), [1.25, 2.5]),
    (np.int64(7), 7),
    (float("nan"), float("nan")),
    (pd.Series([54.321]), ANSWER),
]


@pytest.mark.parametrize("precision", [None, 2])
@pytest.mark.parametrize(("live", "stored"), LIVE)
def test_rewards_score_live_values_against_the_captured_hash(
    live: Any, stored: Any, precision: int | None
) -> None:
    captured = value_hash(stored, precision)  # the hash a capture file holds
    assert outcome_reward(live, captured, precision) == 1.0
    assert outcome_reward(live, value_hash("something else", precision), precision) == 0.0
    columns = {
        "expected_final_answer_hash": [captured, captured],
        "gold_hooks": [[{"name": "v", "value_hash": captured, "depends_on": []}]] * 2,
        "hash_precision": [precision, precision],
    }
    results = {"right": {"answer": live, "hooks": [{"value": live}]}, "wrong": {"answer": -1}}
    kwargs = {"prompts": ["q", "q"], "completions": ["right", "wrong"], **columns}
    assert make_outcome_reward(results.__getitem__)(**kwargs) == [1.0, 0.0]
    assert make_process_reward(results.__getitem__)(**kwargs) == [1.0, 0.0]


def test_the_scheme_matters_for_rounded_floats() -> None:
    rounded = value_hash(ANSWER, 2)
    assert outcome_reward(pd.Series([54.3249]), rounded, 2) == 1.0
    assert outcome_reward(pd.Series([54.3249]), rounded, None) == 0.0
