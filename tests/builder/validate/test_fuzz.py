"""Fuzzed input: generated episodes, mutated the ways real captures break, never crash a build.

Hypothesis draws files of lines, each a valid generated episode (samples.episodes) or a
mutation of one: truncation, wrong types, deep nesting, huge strings, invalid UTF-8,
duplicate keys, NaN/Infinity literals, out-of-range integers, odd timestamps, lone
surrogates, control characters, dropped or unknown fields, non-object lines; files are empty
or not, with or without a trailing newline, LF or CRLF, with or without a BOM, plain or
compressed. For every example: ingest does not raise, and for every file
valid + rejected + blank = its lines (counted independently here), the rejects file holds
every rejected line, and each valid episode line is one ``episodes`` row. A smaller budget
runs the whole build (export included) on the same inputs.

Fixed budget and seed (``derandomize``), so CI runs the same examples every time.
"""

from __future__ import annotations

import gzip
import random
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builder.config import BuildConfig
from builder.ingest.files import ingest_files
from builder.ingest.rejects import RejectsWriter
from builder.ingest.staging import read_staged
from builder.pipeline import BuildFailed, build
from samples.episodes import generate_episode, generate_episodes

FUZZ = settings(
    derandomize=True,
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SMALL_LINE_LIMIT = 150_000

POOL: list[dict[str, Any]] = list(generate_episodes(8, seed=11)) + [
    generate_episode(random.Random(f"fuzz:{form}:{i}"), 100 + i, form=form)
    for form in ("flat", "turns")
    for i in range(2)
]

# ------------------------------------------------------------------------ mutations


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into a JSON value (object keys and list indexes), the root excluded."""
    if not isinstance(value, dict | list):
        return []
    out: list[tuple[Any, ...]] = []
    for key, child in value.items() if isinstance(value, dict) else enumerate(value):
        out.append((*prefix, key))
        out += paths(child, (*prefix, key))
    return out


def get(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


def put(value: Any, path: tuple[Any, ...], new: Any) -> None:
    get(value, path[:-1])[path[-1]] = new


SENTINEL = "\x00FUZZ-SENTINEL\x00"


def with_raw(record: dict[str, Any], path: tuple[Any, ...], raw: bytes) -> bytes:
    """``record`` serialized with the raw JSON text ``raw`` at ``path``."""
    put(record, path, SENTINEL)
    return orjson.dumps(record).replace(orjson.dumps(SENTINEL), raw, 1)


ODD_VALUES = [None, "x", "", 1, -1, 1.5, True, False, [], {}, ["a"], {"a": 1}, "2025-13-45"]
BIG_INTS = [2**31, 2**31 - 1, 2**63, 2**64 + 1, 10**30, -(2**63) - 1, -1]
TIMESTAMPS = [
    "0001-01-01T00:00:00+14:00",
    "9999-12-31T23:59:59-14:00",
    "2025-02-30T00:00:00",
    "2025-01-01T00:00:00Z",
    "2025-01-01",
    "",
    "2025-01-01T25:00:00",
    "1735689600",
]
BAD_BYTES = [b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80\x80", b"\xe2\x82"]
NON_OBJECTS = [b"[]", b"null", b"1", b'"x"', b"{}", b"{", b"}", b"[1, 2", b"\x00", b"{}{}"]


def m_truncate(draw: st.DrawFn, record: dict[str, Any], raw: bytes) -> bytes:
    return raw[: draw(st.integers(0, len(raw) - 1))]


def m_wrong_type(draw: st.DrawFn, record: dict[str, Any], raw: bytes) -> bytes:
    path = draw(st.sampled_from(paths(record)))
    put(record, path, draw(st.sampled_from(ODD_VALUES)))
    return orjson.dumps(record)


def m_deep(draw: st.DrawFn, record: dict[str, Any], raw: bytes) -> bytes:
    depth = draw(st.sampled_from([40, 300, 1_100, 50_000]))
    open_, close = draw(st.sampled_from([(b"[", b"]"), (b'{"a":', b"}")]))
    nested = open_ * depth + b"1" + close * depth
    where = draw(st.sampled_from(["unknown", "value", "answer"]))
    if where == "unknown":
        record["deep_unknown"] = SENTINEL
        return orjson.dumps(record).replace(orjson.dumps(SENTINEL), nested, 1)
    if where == "answer":
        return with_raw(record, ("teacher_gold_trace", "final_answer"), nested)
    return with_raw(record, draw(st.sampled_from(paths(record))), nested)


def m_huge(draw: st.DrawFn, record: dict[str, Any], raw: bytes) -> bytes:
    size = draw(st.sampled_from([20_000, SMALL_LINE_LIMIT + 10, 400_000]))
    text = draw(st.sampled_from(["x", "é", "🙂", "\n", "a\u0000"])) * (size // 2)
    strings = [p for p in paths(record) if isinstance(get(record, p), str)]
    put(record, draw(st.sampled_from(strings)), text)
    return orjson.dumps(record)


def m_invalid_utf8(draw: st.DrawFn, record: dict[str, Any], raw: bytes) -> bytes:
    at = draw(st.integers(0, len(raw)))
    return raw[:at] + draw(st.sampled_from(BAD_BYTES)) + raw[at:]


def m_duplicate_key(draw: st.DrawFn, record: dict[str, Any], raw: bytes) -> bytes:
    key = draw(st.sampled_from(sorted(record)))
    first = orjson.dumps({key: draw(st.sampled_from(ODD_VALUES))})[1:-1]
    return b"{" + first + b"," + raw[1:]


def m_nan(draw: st.DrawFn, record: dict[str, Any], raw: bytes) -> bytes:
    literal = draw(st.sampled_from([b"NaN", b"Infinity", b"-Infinity", b"1e400", b"-1e999"]))
    numbers = [p for p in paths(record) if type(get(record, p)) in (int, float)]
    path = draw(st.sampled_from(numbers or [("extra_number",)]))
    return with_raw(record, path, literal)


def m_big_int(draw: st.DrawFn, record: dict[str, Any], raw: bytes) -> bytes:
    ints = [p for p in paths(record) if type(get(record, p)) is int]
    path = draw(st.sampled_from(ints or [("n_steps",)]))
    return with_raw(record, path, str(draw(st.sampled_from(BIG_INTS))).encode())


def m_timestamp(draw: st.DrawFn, record: dict[str, Any], raw: bytes) -> bytes:
    path = draw(st.sampled_from([("timestamp",), ("question", "created_at")]))
    put(record, path, draw(st.sampled_from(TIMESTAMPS)))
    return orjson.dumps(record)


def m_surrogate(draw: st.DrawFn, record: dict[str, Any], raw: bytes) -> bytes:
    escape = draw(st.sampled_from([rb'"\ud800"', rb'"a\udfffb"', rb'"\ud83d\ude42"', rb'"\u0000"']))
    strings = [p for p in paths(record) if isinstance(get(record, p), str)]
    return with_raw(record, draw(st.sampled_from(strings)), escape)


def m_control(draw: st.DrawFn, record: dict[str, Any], raw: bytes) -> bytes:
    strings = [p for p in paths(record) if isinstance(get(record, p), str)]
    path = draw(st.sampled_from(strings))
    put(record, path, get(record, path) + "\u0000\u001b[31m\u2028\u2029\ufeff\r")
    return orjson.dumps(record)


def m_drop(draw: st.DrawFn, record: dict[str, Any], raw: bytes) -> bytes:
    keyed = [p for p in paths(record) if isinstance(p[-1], str)]
    path = draw(st.sampled_from(keyed))
    del get(record, path[:-1])[path[-1]]
    return orjson.dumps(record)


def m_unknown(draw: st.DrawFn, record: dict[str, Any], raw: bytes) -> bytes:
    objects = [()] + [p for p in paths(record) if isinstance(get(record, p), dict)]
    get(record, draw(st.sampled_from(objects)))["zz_unknown"] = {"nested": [1, "two", None]}
    return orjson.dumps(record)


def m_non_object(draw: st.DrawFn, record: dict[str, Any], raw: bytes) -> bytes:
    return draw(st.sampled_from(NON_OBJECTS))


def m_blank(draw: st.DrawFn, record: dict[str, Any], raw: bytes) -> bytes:
    return draw(st.sampled_from([b"", b"   ", b"\t", b" \t "]))


def m_none(draw: st.DrawFn, record: dict[str, Any], raw: bytes) -> bytes:
    return raw


Mutation = Callable[[st.DrawFn, dict[str, Any], bytes], bytes]
MUTATIONS: list[Mutation] = [
    m_none,
    m_none,
    m_truncate,
    m_wrong_type,
    m_deep,
    m_huge,
    m_invalid_utf8,
    m_duplicate_key,
    m_nan,
    m_big_int,
    m_timestamp,
    m_surrogate,
    m_control,
    m_drop,
    m_unknown,
    m_non_object,
    m_blank,
]


@st.composite
def lines(draw: st.DrawFn) -> bytes:
    record = orjson.loads(orjson.dumps(draw(st.sampled_from(POOL))))
    mutation = draw(st.sampled_from(MUTATIONS))
    raw = mutation(draw, record, orjson.dumps(record))
    return raw.replace(b"\n", b" ")  # one line each (a mutation never adds a line break)


@st.composite
def files(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "lines": draw(st.lists(lines(), max_size=7)),
        "eol": draw(st.sampled_from([b"\n", b"\r\n"])),
        "trailing": draw(st.booleans()),
        "bom": draw(st.booleans()),
        "suffix": draw(st.sampled_from([".jsonl", ".jsonl", ".jsonl.gz", ".jsonl.zst"])),
    }


def write_file(path: Path, spec: dict[str, Any]) -> int:
    """Writes the file; returns its number of lines as a reader should count them."""
    data = spec["eol"].join(spec["lines"])
    if spec["lines"] and spec["trailing"]:
        data += spec["eol"]
    if spec["bom"]:
        data = b"\xef\xbb\xbf" + data
    if spec["suffix"] == ".jsonl.gz":
        path.write_bytes(gzip.compress(data, mtime=0))
    elif spec["suffix"] == ".jsonl.zst":
        path.write_bytes(zstandard.ZstdCompressor().compress(data))
    else:
        path.write_bytes(data)
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def write_inputs(root: Path, specs: list[dict[str, Any]]) -> dict[str, int]:
    expected = {}
    for i, spec in enumerate(specs):
        path = root / f"in{i}{spec['suffix']}"
        expected[str(path)] = write_file(path, spec)
    return expected


def rejects_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


@FUZZ
@given(specs=st.lists(files(), min_size=1, max_size=3), max_line=st.sampled_from([0, 1]))
def test_ingest_never_crashes_and_accounts_for_every_line(
    specs: list[dict[str, Any]], max_line: int
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        expected = write_inputs(root, specs)
        config = BuildConfig(
            episodes=tuple(expected),
            max_line_bytes=(64 * 1024 * 1024, SMALL_LINE_LIMIT)[max_line],
            batch_lines=3,
        )
        rejects = RejectsWriter(root / "rejects.jsonl")
        try:
            result = ingest_files(config, root / "tables", rejects)
        finally:
            rejects.close()
        stats = {s.path: s.lines for s in result.inputs}
        assert stats == expected
        for path, lines_ in expected.items():
            c = result.input(path)
            assert c.valid + c.rejected + c.blank == lines_, path
        written = rejects_lines(root / "rejects.jsonl")
        assert len(written) == result.rejected == rejects.total
        for reject in written:
            assert reject["source_file"] in expected and reject["line"] >= 1
            assert reject["message"]
        valid = sum(c.valid for c in result.inputs)
        assert read_staged(root / "tables", "episodes").num_rows == valid
        assert result.rows["episodes"] == valid


@settings(FUZZ, max_examples=6)
@given(specs=st.lists(files(), min_size=1, max_size=2))
def test_full_build_never_crashes(specs: list[dict[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        expected = write_inputs(root, specs)
        config = replace(
            BuildConfig(),
            episodes=tuple(expected),
            out=root / "dataset",
            rejects=root / "rejects.jsonl",
            max_reject_ratio=1.0,
        )
        try:
            report = build(config)
        except BuildFailed:  # a clean refusal (e.g. nothing valid to build) is not a crash
            return
        for entry in report.manifest["inputs"]:
            assert entry["valid"] + entry["rejected"] + entry["blank"] == entry["lines"]
            assert entry["lines"] == expected[entry["path"]]
        assert (root / "dataset" / "README.md").is_file()


def test_empty_inputs_build_or_refuse_cleanly() -> None:
    """Empty files (no bytes, only blank lines, only a BOM) build an empty dataset, or the
    build refuses with BuildFailed; either way every line is accounted for."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        contents = [b"", b"\n\n", b"\xef\xbb\xbf", b"\r\n \r\n"]
        paths_ = []
        for i, data in enumerate(contents):
            path = root / f"empty{i}.jsonl"
            path.write_bytes(data)
            paths_.append(str(path))
        config = replace(
            BuildConfig(), episodes=tuple(paths_), out=root / "dataset", rejects=root / "r.jsonl"
        )
        try:
            report = build(config)
        except BuildFailed:
            assert not (root / "dataset").exists()
            return
        lines_ = [entry["lines"] for entry in report.manifest["inputs"]]
        assert lines_ == [0, 2, 1, 2]
        assert all(entry["valid"] == entry["rejected"] == 0 for entry in report.manifest["inputs"])


def ingest_one(record_bytes: bytes) -> None:
    """Ingest a one-line file: it must not raise, and the line is valid or rejected."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        path = root / "one.jsonl"
        path.write_bytes(record_bytes + b"\n")
        config = BuildConfig(episodes=(str(path),))
        result = ingest_files(config, root / "tables", RejectsWriter(None))
        c = result.input(str(path))
        assert (c.valid, c.rejected + c.valid, c.blank) in {(1, 1, 0), (0, 1, 0)}


@pytest.mark.parametrize("moment", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00"])
@pytest.mark.parametrize("where", ["timestamp", "created_at"])
def test_timestamp_out_of_range_in_utc_is_not_a_crash(moment: str, where: str) -> None:
    """Found by the fuzzer: a time that is valid with its offset but not in UTC."""
    record = orjson.loads(orjson.dumps(POOL[0]))
    if where == "timestamp":
        record["timestamp"] = moment
    else:
        record["question"]["created_at"] = moment
    ingest_one(orjson.dumps(record))


@pytest.mark.parametrize("value", [2**31, 2**63, -(2**31) - 1])
@pytest.mark.parametrize(
    "path",
    [
        ("question", "n_steps"),
        ("teacher_gold_trace", "total_turns"),
        ("teacher_gold_trace", "archived_turn_count"),
        ("triangulation_metadata", "majority_count"),
    ],
)
def test_integer_beyond_its_column_type_is_not_a_crash(path: tuple[str, str], value: int) -> None:
    """Found by the fuzzer: an int32 column given an integer it cannot hold."""
    record = orjson.loads(orjson.dumps(POOL[0]))
    record[path[0]][path[1]] = value
    ingest_one(with_raw(record, path, str(value).encode()))
