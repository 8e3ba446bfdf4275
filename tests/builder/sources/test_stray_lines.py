"""What a fuzzing review found at the edges of a JSONL file: a stray ``{`` or ``[`` on its
first line costs that line only, as anywhere else, and a line keeps every byte but its one
terminator."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from builder.cli.validate_files import validate_files
from builder.config import BuildConfig
from builder.ingest.rejects import RejectsWriter
from builder.pipeline import build
from builder.sources.documents import records
from builder.sources.inputs import InputError, InputFile
from schemas.episode import Episode

EPISODES = Path(__file__).resolve().parents[3] / "data" / "episodes" / "episodes.jsonl"


def episode_lines(n: int) -> list[bytes]:
    return EPISODES.read_bytes().splitlines()[:n]


def build_rejects(path: Path, out: Path) -> tuple[list[dict], dict]:
    """The rejects and the manifest's input of a build of ``path`` alone (raises if refused)."""
    rejects = out / "rejects.jsonl"
    build(BuildConfig(episodes=(str(path),), out=out / "ds", rejects=rejects, max_reject_ratio=1))
    manifest = json.loads((out / "ds" / "manifest.json").read_text())
    return [json.loads(line) for line in rejects.open()], manifest["inputs"][0]


@pytest.mark.parametrize("stray", [b"{", b"["])
@pytest.mark.parametrize("where", [0, 1])
def test_a_stray_opening_line_of_a_jsonl_file_is_one_reject(
    tmp_path: Path, stray: bytes, where: int
) -> None:
    lines = episode_lines(3)
    lines.insert(where, stray)
    path = tmp_path / "stray.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    rejects, stats = build_rejects(path, tmp_path / "out")
    assert [(r["line"], r["kind"], r["raw"]) for r in rejects] == [
        (where + 1, "invalid_json", stray.decode())
    ]
    assert (stats["lines"], stats["valid"], stats["rejected"]) == (4, 3, 1)


def test_a_stray_bracket_of_a_jsonl_file_over_the_limit_reads_line_by_line(
    tmp_path: Path,
) -> None:
    """Over the limit a list is streamed; a "[" followed by records is no list there either."""
    lines = [b"[", *episode_lines(3)]
    path = tmp_path / "stray.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    limit = max(map(len, lines)) + 1  # each line fits, the file does not
    got = list(records(InputFile(str(path), 1 << 26).lines(), limit))
    assert [(x.number, x.raw) for x in got] == list(enumerate(lines, 1))
    writer = RejectsWriter(None)
    counts = validate_files([str(path)], Episode, writer, limit)
    assert (counts[str(path)].valid, dict(writer.by_kind)) == (3, {"invalid_json": 1})


def test_a_file_named_json_that_breaks_is_still_refused(tmp_path: Path) -> None:
    """Only a file named JSONL says its lines are records: a broken .json is refused whole,
    naming where it breaks, as docs/inputs.md says."""
    body = b"\n".join(episode_lines(3)) + b"\n"
    brace, bracket = tmp_path / "brace.json", tmp_path / "bracket.json"
    brace.write_bytes(b"{\n" + body)
    bracket.write_bytes(b"[\n" + body)
    with pytest.raises(InputError, match="breaks at line 2"):
        list(records(InputFile(str(brace), 1 << 26).lines(), 1 << 26))
    with pytest.raises(InputError, match="is not closed"):
        list(records(InputFile(str(bracket), 1 << 26).lines(), 1 << 26))


def test_a_pretty_printed_list_named_jsonl_is_still_read_as_a_document(tmp_path: Path) -> None:
    episodes = [json.loads(line) for line in episode_lines(3)]
    path = tmp_path / "pretty.jsonl"
    path.write_text(json.dumps(episodes, indent=2))
    got = list(records(InputFile(str(path), 1 << 26).lines(), 1 << 26))
    assert [json.loads(x.raw) for x in got] == episodes


def test_a_reject_keeps_a_carriage_return_before_its_crlf(tmp_path: Path) -> None:
    """Only the terminator (LF, or one CRLF) goes: ``\\r\\r\\n`` leaves the record one CR, and
    a line of only CRs before it is blank."""
    path = tmp_path / "cr.jsonl"
    path.write_bytes(b'{"episode_id": "x"}\r\r\n\r\r\n\r\n{"episode_id": "y"}\n')
    got = [(x.number, x.raw) for x in InputFile(str(path), 1 << 20).lines()]
    assert got == [(1, b'{"episode_id": "x"}\r'), (2, b"\r"), (3, b""), (4, b'{"episode_id": "y"}')]
    rejects, stats = build_rejects(path, tmp_path / "out")
    assert [(r["line"], r["kind"], r["raw"]) for r in rejects] == [
        (1, "schema", '{"episode_id": "x"}\r'),
        (4, "schema", '{"episode_id": "y"}'),
    ]
    assert (stats["lines"], stats["blank"], stats["rejected"]) == (4, 2, 2)


def test_a_pretty_printed_list_named_jsonl_with_one_broken_item_costs_that_item(
    tmp_path: Path,
) -> None:
    """Only a stray line before records reads line by line: a pretty-printed list whose third
    item of five breaks (an unclosed string) is read item by item, that item one reject."""
    episodes = [json.loads(line) for line in episode_lines(5)]
    text = json.dumps(episodes, indent=2)
    key = f'"episode_id": "{episodes[2]["episode_id"]}"'
    assert text.count(key) == 1
    path = tmp_path / "pretty.jsonl"
    path.write_text(text.replace(key, key[:-1]))  # item 3's string left open
    rejects, stats = build_rejects(path, tmp_path / "out")
    assert [r["kind"] for r in rejects] == ["invalid_json"]
    assert rejects[0]["line"] == text[: text.index(key)].count("\n")  # item 3 opens there
    assert (stats["records"], stats["valid"], stats["rejected"]) == (5, 4, 1)


def test_a_cut_short_list_or_broken_object_named_jsonl_is_refused(tmp_path: Path) -> None:
    """No stray line before records: refused, naming where it ends or breaks, as in a .json."""
    episodes = [json.loads(line) for line in episode_lines(3)]
    cut, broken = tmp_path / "cut.jsonl", tmp_path / "broken.ndjson"
    cut.write_text(json.dumps(episodes, indent=2)[:-200])
    broken.write_text(json.dumps(episodes[0], indent=2)[:-50])
    with pytest.raises(InputError, match="is not closed"):
        list(records(InputFile(str(cut), 1 << 26).lines(), 1 << 26))
    with pytest.raises(InputError, match="breaks at line"):
        list(records(InputFile(str(broken), 1 << 26).lines(), 1 << 26))
