"""Verdicts that must not hang on which parser reads a line: a BOM that survives the one the
reader strips is invalid JSON however the line continues, and an unreadable record's message
names the line of the file where it broke."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from builder.cli.validate_files import validate_files
from builder.ingest.rejects import RejectsWriter
from builder.sources.documents import records
from builder.sources.inputs import BOM, InputFile, SourceLine
from builder.validate.json_lines import duplicate_keys, parse_line
from builder.validate.validator import Validator
from schemas.episode import Episode

EPISODES = Path(__file__).resolve().parents[3] / "data" / "episodes" / "episodes.jsonl"


def episode(n: int = 0) -> dict:
    return json.loads(EPISODES.read_bytes().splitlines()[n])


@pytest.mark.parametrize(
    "tail", [b"", b', "zz": NaN', b', "zz": Infinity', b', "zz": 12345678901234567890123']
)
def test_a_second_bom_is_invalid_json_whatever_else_the_line_holds(
    tmp_path: Path, tail: bytes
) -> None:
    line = json.dumps(episode()).encode()[:-1] + tail + b"}"
    assert parse_line(SourceLine("f.jsonl", 1, line))[1] is None  # read without the BOM
    value, reject = parse_line(SourceLine("f.jsonl", 1, BOM + line))
    assert value is None and reject is not None
    assert (reject.kind, reject.raw) == ("invalid_json", BOM + line)
    assert "byte order mark" in reject.errors[0].message
    assert duplicate_keys(BOM + b'{"a": 1, "a": NaN}') == []  # no JSON: no keys to name

    path = tmp_path / "double_bom.jsonl"  # the reader strips one BOM, not two
    path.write_bytes(BOM + BOM + line + b"\n" + line + b"\n")
    writer = RejectsWriter(None)
    counts = validate_files([str(path)], Episode, writer, 1 << 26)
    assert (counts[str(path)].valid, dict(writer.by_kind)) == (1, {"invalid_json": 1})
    checked = Validator(Episode).validate(next(iter(InputFile(str(path), 1 << 26).lines())))
    assert getattr(checked, "kind", None) == "invalid_json"


def test_a_broken_record_of_a_document_names_the_file_s_line_where_it_broke(
    tmp_path: Path,
) -> None:
    text = json.dumps([episode(i) for i in range(4)], indent=2)
    lines = text.splitlines()
    start = [i for i, t in enumerate(lines, 1) if t == "  {"][1]  # the second item's "{"
    assert lines[start].lstrip().startswith('"episode_id"')
    lines[start] += ' "oops'  # an unclosed string on the item's second line
    path = tmp_path / "broken.json"
    path.write_text("\n".join(lines) + "\n")
    writer = RejectsWriter(None)
    counts = validate_files([str(path)], Episode, writer, 1 << 26)
    assert (counts[str(path)].valid, dict(writer.by_kind)) == (3, {"invalid_json": 1})
    [reject] = [
        r
        for r in (parse_line(x)[1] for x in records(InputFile(str(path), 1 << 26).lines()))
        if r is not None
    ]
    assert reject.line == start
    message = reject.errors[0].message
    assert f"line {start + 1} column " in message and "line 2 " not in message


def test_a_jsonl_line_s_message_names_its_own_line() -> None:
    _, reject = parse_line(SourceLine("f.jsonl", 7, b'{"a": 1'))
    assert reject is not None and reject.kind == "invalid_json"
    assert reject.errors[0].message.endswith(": line 7 column 8")
