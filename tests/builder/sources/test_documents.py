"""Episode files written as one JSON document (``builder.sources.documents``): a pretty-printed
episode, as the capture side's fixtures are, or a list of them, reads as one record per
episode numbered by the line it starts on; JSONL streams as before."""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from builder.cli.validate_files import validate_files
from builder.config import BuildConfig
from builder.ingest.rejects import RejectsWriter
from builder.pipeline import build
from builder.report.stats import funnel
from builder.sources import documents
from builder.sources.documents import records
from builder.sources.inputs import InputError, InputFile, SourceLine
from schemas.episode import Episode

EPISODES = Path(__file__).resolve().parents[3] / "data" / "episodes" / "episodes.jsonl"
SOURCE_COLUMNS = {"source_file", "source_line"}


@dataclass(frozen=True)
class CachedConfig(BuildConfig):
    cache_dir: Path | None = None


def sample_episodes(n: int) -> list[dict]:
    return [json.loads(line) for line in EPISODES.read_text().splitlines()[:n]]


def read(path: Path, limit: int = 1 << 26) -> list[SourceLine]:
    return list(records(InputFile(str(path), 1 << 26).lines(), limit))


def starts(path: Path) -> list[int]:
    """Lines where a top-level list item of an indent=2 document starts."""
    return [i for i, text in enumerate(path.read_text().splitlines(), 1) if text == "  {"]


def test_jsonl_streams_on_after_its_first_line() -> None:
    def lines() -> Iterator[SourceLine]:
        yield SourceLine("f.jsonl", 1, b"")
        yield SourceLine("f.jsonl", 2, b'{"episode_id": "a"}')
        yield SourceLine("f.jsonl", 3, b"[1, 2]")  # a bad line, not the start of a document
        raise AssertionError("read ahead of what was asked")

    out = records(lines(), limit=1 << 20)
    assert [next(out).number for _ in range(3)] == [1, 2, 3]
    python_dialect = [SourceLine("g.jsonl", 1, b'{"x": NaN}'), SourceLine("g.jsonl", 2, b"{}")]
    assert list(records(python_dialect, 1 << 20)) == python_dialect  # json.dumps writes NaN


def test_a_document_is_one_record_per_episode(tmp_path: Path) -> None:
    episodes = sample_episodes(3)
    listed = tmp_path / "episodes.json"
    listed.write_text(json.dumps(episodes, indent=2) + "\n")
    got = read(listed)
    assert [json.loads(line.raw) for line in got] == episodes
    assert [line.number for line in got] == starts(listed)
    compact = tmp_path / "compact.json"  # json.dump(episodes, f): the whole file on one line
    compact.write_text(json.dumps(episodes))
    assert [(x.number, json.loads(x.raw)) for x in read(compact)] == [(1, e) for e in episodes]
    named = tmp_path / "compact.jsonl.gz"  # in a file named JSONL, a list is a bad line
    named.write_bytes(gzip.compress(compact.read_bytes()))
    assert [(x.number, x.raw) for x in read(named)] == [(1, compact.read_bytes())]
    single = tmp_path / "episode.json"
    single.write_text("\n" + json.dumps(episodes[0], indent=4))
    assert [(x.number, json.loads(x.raw)) for x in read(single)] == [(2, episodes[0])]


def test_what_is_not_one_document_within_the_limit_is_read_line_by_line(tmp_path: Path) -> None:
    one = json.dumps(sample_episodes(1)[0], indent=2)  # one record, over the limit
    big = tmp_path / "big.json"
    big.write_text(one)
    assert len(read(big, limit=len(one) // 2)) == len(one.splitlines())
    pretty = json.dumps(sample_episodes(2), indent=2)
    broken = tmp_path / "broken.json"
    broken.write_text("(\n" + pretty[: len(pretty) // 2])  # no JSON: every line stays a line
    assert [line.number for line in read(broken)] == list(
        range(1, pretty.count("\n", 0, len(pretty) // 2) + 3)
    )
    cut = tmp_path / "cut.json"  # one record pretty-printed, cut short: refused, not lines
    one = json.dumps(sample_episodes(1)[0], indent=2)
    cut.write_text(one[: len(one) // 2])
    with pytest.raises(InputError, match="the JSON document that opens at line 1 breaks at"):
        read(cut)


def test_a_streamed_item_with_a_line_over_the_limit_is_one_reject_and_the_rest_reads(
    tmp_path: Path,
) -> None:
    """An item whose line is over ``max_line_bytes`` (a long output string) is a
    line_too_long record; the items after it are read, and a list cut inside that line is
    refused like any list the file ends inside."""
    episodes = sample_episodes(3)
    episodes[1]["question"]["hint"] = "x" * 50_000
    path = tmp_path / "big.json"
    path.write_text(json.dumps(episodes, indent=2))
    got = list(records(InputFile(str(path), 40_000).lines(), 40_000))
    assert [(line.number, line.too_long) for line in got] == [
        (n, i == 1) for i, n in enumerate(starts(path))
    ]
    assert [json.loads(line.raw) for i, line in enumerate(got) if i != 1] == [
        episodes[0],
        episodes[2],
    ]
    text = path.read_text()
    cut = tmp_path / "cut.json"
    cut.write_text(text[: text.index("x" * 50_000) + 30_000])
    with pytest.raises(InputError, match="is not closed"):
        list(records(InputFile(str(cut), 40_000).lines(), 40_000))


def test_a_list_cut_short_is_refused_naming_where_it_ends(tmp_path: Path) -> None:
    """A document list whose file ends before the list closes (a copy that stopped) is
    refused whole, as a truncated .gz is: cut inside an item or between two, its items
    would otherwise build as if they were all (or be one reject per physical line)."""
    pretty = json.dumps(sample_episodes(4), indent=2)
    whole = tmp_path / "whole.json"
    whole.write_text(pretty)
    lines = pretty.splitlines()
    inside = starts(whole)[3] + 5  # five lines into the fourth item
    between = starts(whole)[3] - 1  # just after the third item's "},"
    for cut, where in ((inside, "an item"), (between, "the list")):
        broken = tmp_path / f"cut{cut}.json"
        broken.write_text("\n".join(lines[:cut]) + "\n")
        said = (
            f"the JSON list that opens at line 1 is not closed: the file ends at line {cut}, "
            f"inside {where} (cut short?)"
        )
        with pytest.raises(InputError, match=re.escape(said)):
            read(broken)
        with pytest.raises(InputError, match=re.escape(said)):
            validate_files([str(broken)], Episode, RejectsWriter(None), 1 << 26)
    assert [line.number for line in read(whole)] == starts(whole)


def test_an_array_over_the_limit_streams_its_items(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    episodes = sample_episodes(12)
    path = tmp_path / "episodes.json"
    path.write_text("\n" + json.dumps(episodes, indent=2) + "\n")
    whole = read(path)
    limit = max(len(line.raw) for line in whole) + 10  # every item fits, the array does not
    streamed = read(path, limit)
    assert [line.raw for line in whole] == [
        json.dumps(e, indent=2).replace("\n", "\n  ").encode() for e in episodes
    ]
    assert streamed[0] == SourceLine(str(path), 1, b"")  # the blank line before it
    assert streamed[1:] == whole

    def lines() -> Iterator[SourceLine]:  # streamed, not read to the end first
        yield from InputFile(str(path), 1 << 26).lines()
        raise AssertionError("read to the end")

    monkeypatch.setattr(documents, "_BLOCK_BYTES", 4096)  # brackets counted per 4 KB
    out = records(lines(), limit)
    assert [next(out).number for _ in range(4)] == [1, *starts(path)[:3]]

    tail = tmp_path / "tail.json"  # after the array: lines as they are, which validation names
    tail.write_text(path.read_text() + '{"episode_id": "after"}\n')
    after = read(tail, limit)
    assert after[:-1] == [replace(x, path=str(tail)) for x in streamed]
    assert (after[-1].number, after[-1].raw) == (
        len(tail.read_text().splitlines()),
        b'{"episode_id": "after"}',
    )

    big = max(range(12), key=lambda i: len(whole[i].raw))
    small = read(path, len(whole[big].raw) - 1)  # the largest item is over the limit
    assert [(x.number, x.too_long) for x in small[1:]] == [
        (n, i == big) for i, n in enumerate(starts(path))
    ]
    assert small[1 + big].raw == whole[big].raw[:256]
    writer = RejectsWriter(None)
    counts = validate_files([str(path)], Episode, writer, len(whole[big].raw) - 1)
    assert (counts[str(path)].valid, counts[str(path)].blank) == (11, 1)
    assert dict(writer.by_kind) == {"line_too_long": 1}


def test_a_document_builds_like_its_jsonl_and_rejects_name_where_each_episode_starts(
    tmp_path: Path,
) -> None:
    episodes = sample_episodes(12)
    episodes[4] = {**episodes[4], "verified": "yes"}
    jsonl = tmp_path / "episodes.jsonl"
    jsonl.write_text("".join(json.dumps(e) + "\n" for e in episodes))
    document = tmp_path / "episodes.json"
    document.write_text(json.dumps(episodes, indent=2))
    tables = {}
    for path in (jsonl, document):
        out, rejects = tmp_path / path.suffix / "ds", tmp_path / path.suffix / "rejects.jsonl"
        build(BuildConfig(episodes=(str(path),), out=out, rejects=rejects, max_reject_ratio=0.5))
        tables[path] = {  # file names carry a digest of their bytes: key by config, split
            (p.parent.name, p.name.split("-")[0]): pq.read_table(p).drop_columns(
                sorted(SOURCE_COLUMNS & set(pq.read_schema(p).names))
            )
            for p in sorted(out.rglob("*.parquet"))
        }
        [reject] = [json.loads(line) for line in rejects.open()]
        assert json.loads(reject["raw"]) == episodes[4]
        assert reject["path"] == "$.verified"
    assert tables[jsonl] and tables[jsonl] == tables[document]
    assert reject["line"] == starts(document)[4]
    episodes_table = pq.read_table(tmp_path / ".json" / "ds" / "episodes")
    assert sorted(episodes_table["source_line"].to_pylist()) == [
        n for i, n in enumerate(starts(document)) if i != 4
    ]

    manifest = json.loads((tmp_path / ".json" / "ds" / "manifest.json").read_text())
    steps = {step.key: step.count for step in funnel(manifest, {})}
    physical = len(document.read_text().splitlines())
    assert (steps["input_lines"], steps["non_blank"], steps["valid"]) == (physical, 12, 11)
    (stats,) = manifest["inputs"]
    assert (stats["lines"], stats["records"], stats["valid"], stats["rejected"]) == (
        physical,
        12,
        11,
        1,
    )

    counts = validate_files([str(document)], Episode, RejectsWriter(None), 1 << 26)
    assert (counts[str(document)].valid, counts[str(document)].rejected) == (11, 1)


def test_a_cached_rebuild_reads_back_a_documents_episode_for_a_late_reject(
    tmp_path: Path,
) -> None:
    episodes = sample_episodes(6)
    document = tmp_path / "b.json"
    document.write_text(json.dumps(episodes, indent=2))
    runs = {}
    for name, files in (("first", [document]), ("second", [tmp_path / "a.jsonl", document])):
        if name == "second":  # sorts first and repeats the document's fourth episode
            (tmp_path / "a.jsonl").write_text(json.dumps(episodes[3]) + "\n")
        for cache in (None, tmp_path / "cache"):
            key = f"{name}-{'cached' if cache else 'clean'}"
            config = CachedConfig(
                episodes=tuple(map(str, files)),
                out=tmp_path / key / "ds",
                rejects=tmp_path / key / "rejects.jsonl",
                max_reject_ratio=0.5,
                cache_dir=cache,
            )
            build(config)
            runs[key] = config.rejects.read_bytes()
    assert runs["second-cached"] == runs["second-clean"]
    [reject] = [json.loads(line) for line in runs["second-clean"].splitlines()]
    assert (reject["source_file"], reject["line"]) == (str(document), starts(document)[3])
    assert json.loads(reject["raw"]) == episodes[3]


def test_a_repeated_id_in_a_list_on_one_line_is_a_duplicate(tmp_path: Path) -> None:
    """Records of a list written on a single line all start on line 1: a repeated episode
    id there is a duplicate_episode_id reject, in ``build`` as in ``validate``, where it was
    taken for the first record itself and kept twice."""
    episodes = sample_episodes(3)
    path = tmp_path / "episodes.json"
    path.write_text(json.dumps([*episodes, {**episodes[1], "verified": False}]))
    lines = read(path)
    assert [(line.number, line.item) for line in lines] == [(1, 1), (1, 2), (1, 3), (1, 4)]
    rejects = RejectsWriter(None)
    validate_files([str(path)], Episode, rejects, 1 << 26)
    assert dict(rejects.by_kind) == {"duplicate_episode_id": 1}
    out = tmp_path / "ds"
    report = build(
        BuildConfig(
            episodes=(str(path),), out=out, rejects=tmp_path / "r.jsonl", max_reject_ratio=1
        )
    )
    assert report.manifest["rejects"]["by_kind"] == {"duplicate_episode_id": 1}
    assert pq.read_table(out / "episodes").num_rows == 3
