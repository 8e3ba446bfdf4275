"""Row lengths: characters of the text a trainer reads, tokens from a local tokenizer, and the
share over context limits."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from builder.pipeline import BuildReport
from builder.report import lengths
from builder.report.errors import TokenizerError
from builder.report.page import Options, write_report

MESSAGES = [
    [
        {"role": "user", "content": "load the data"},
        {"role": "assistant", "content": "```python\ndf = 1\n```"},
    ],
    [{"role": "user", "content": None}],
]


def word_tokenizer(folder: Path) -> Path:
    """A whitespace word-level tokenizer saved as ``tokenizer.json`` (offline)."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"[UNK]": 0, "load": 1, "the": 2, "data": 3}
    core = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    folder.mkdir(parents=True, exist_ok=True)
    core.save(str(folder / "tokenizer.json"))
    return folder


def test_characters_add_up_every_message_and_column() -> None:
    sft = pl.DataFrame({"messages": MESSAGES})
    dpo = pl.DataFrame(
        {
            "prompt": [[{"role": "user", "content": "abc"}]],
            "chosen": [[{"role": "assistant", "content": "12345"}]],
            "rejected": [[{"role": "assistant", "content": "12"}]],
        }
    )
    prm = pl.DataFrame({"step": ["x = 1", None]})
    stepwise = pl.DataFrame({"prompt": ["ab"], "completions": [["c", "de"]]})
    found = lengths.measure([("sft", sft), ("dpo", dpo), ("prm", prm), ("prm_stepwise", stepwise)])
    assert {name: counts.tolist() for name, counts in found.chars.items()} == {
        "sft": [13 + 20, 0],
        "dpo": [3 + 5],  # the prompt and the longer answer
        "prm": [5, 0],
        "prm_stepwise": [2 + 1 + 2],
    }
    assert found.tokens is None
    assert found.token_counts("sft").tolist() == [9, 0]  # ceil(chars / 4)


def test_tokens_come_from_the_tokenizer(tmp_path: Path) -> None:
    folder = word_tokenizer(tmp_path / "tok")
    sft = pl.DataFrame({"messages": MESSAGES})
    found = lengths.measure([("sft", sft)], folder)
    # "load the data" + "\n" + the code block: 3 words, then 5 unknown pieces
    assert found.tokens is not None and found.tokens["sft"].tolist() == [3 + 5, 0]
    assert found.tokenizer == "tok"
    again = lengths.measure([("sft", sft)], folder / "tokenizer.json").tokens
    assert again is not None and again["sft"].tolist() == [3 + 5, 0]


def test_dpo_tokens_count_the_longer_of_chosen_and_rejected(tmp_path: Path) -> None:
    folder = word_tokenizer(tmp_path / "tok")
    # "zz" sorts after "a a a" but is the shorter: the longer text is the one counted
    dpo = pl.DataFrame(
        {"prompt": ["p", "p"], "chosen": ["zz", "a a a a"], "rejected": ["a a a", "b"]}
    )
    found = lengths.measure([("dpo", dpo)], folder)
    assert found.tokens is not None and found.tokens["dpo"].tolist() == [1 + 3, 1 + 4]
    assert found.chars["dpo"].tolist() == [1 + 5, 1 + 7]


def test_share_over_a_limit() -> None:
    found = lengths.Lengths({"sft": np.array([4 * 5000, 10, 4 * 40000, 1])}, None, None)
    assert found.over("sft", 4096) == 0.5
    assert found.over("sft", 32768) == 0.25
    assert lengths.summary(found, "sft")["chars_max"] == 160000


def test_a_missing_tokenizer_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(TokenizerError, match=r"--tokenizer .*no such file"):
        lengths.load_tokenizer(tmp_path / "nothing")
    other = tmp_path / "rows.jsonl"  # a file: no folder transformers could read either
    other.write_text("{}\n")
    with pytest.raises(TokenizerError, match=r"rows.jsonl: a file, but not a tokenizer.json"):
        lengths.load_tokenizer(other)
    pipe = tmp_path / "pipe"  # neither a file nor a folder: no transformers to suggest
    os.mkfifo(pipe)
    with pytest.raises(TokenizerError, match=r"pipe: neither a tokenizer.json nor a folder"):
        lengths.load_tokenizer(pipe)


def test_the_report_counts_tokens_with_a_tokenizer(
    sample_build: BuildReport, tmp_path: Path
) -> None:
    folder = word_tokenizer(tmp_path / "tok")
    page = write_report(sample_build.out, tmp_path / "r.html", options=Options(tokenizer=folder))
    text = page.path.read_text(encoding="utf-8")
    assert "from the tokenizer tok" in text and "ESTIMATED" not in text
    assert re.search(r'data-metric="lengths\.sft\.tokens_max" data-value="[1-9]', text)
    plain = write_report(sample_build.out, tmp_path / "p.html").path.read_text(encoding="utf-8")
    assert "ESTIMATED as characters / 4" in plain and "tokens_max" not in plain


def test_a_tokenizer_folder_without_tokenizer_json_goes_through_transformers(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "bert"
    folder.mkdir()
    (folder / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nload\nthe\ndata\n")
    (folder / "tokenizer_config.json").write_text('{"tokenizer_class": "BertTokenizer"}')
    count = lengths.load_tokenizer(folder)
    assert count(["load the data", "x"]) == [3 + 2, 1 + 2]  # with [CLS] and [SEP]


def test_rows_read_in_batches_measure_as_one_frame() -> None:
    """The build measures a config a batch at a time, keeping one number per row."""
    sft = pl.DataFrame({"messages": MESSAGES * 3})
    whole = lengths.measure([("sft", sft)]).chars["sft"]
    parts = lengths.measure([("sft", (sft.slice(i, 2) for i in range(0, 6, 2)))]).chars["sft"]
    assert parts.dtype == np.int32 and parts.tolist() == whole.tolist() == [33, 0] * 3


def test_the_memo_keeps_each_files_lengths_by_its_digest(
    sample_build: BuildReport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a memo, counting again reads no data file and gives the same lengths; a file
    whose digest changed is read again, and counts of files no longer built are dropped."""
    import json

    from builder.report.folder import BuildFolder

    memo = tmp_path / "memo"
    manifest = json.loads((sample_build.out / "manifest.json").read_text())
    build = BuildFolder(sample_build.out, manifest=manifest)
    first = lengths.of_build(build, memo=memo)
    plain = lengths.of_build(build)  # no memo
    assert first.chars and {k: v.tolist() for k, v in first.chars.items()} == {
        k: v.tolist() for k, v in plain.chars.items()
    }
    stored = sorted(lengths.Memo.load(memo).entries)
    assert stored and [p.name for p in memo.iterdir()] == [lengths.Memo.FILE]

    read: list[Path] = []
    real = lengths._file_batches

    def counting(path: Path, columns: list[str]):  # type: ignore[no-untyped-def]
        read.append(path)
        return real(path, columns)

    monkeypatch.setattr(lengths, "_file_batches", counting)
    again = lengths.of_build(build, memo=memo)
    assert read == []
    assert {k: v.tolist() for k, v in again.chars.items()} == {
        k: v.tolist() for k, v in first.chars.items()
    }
    # One file "changed": a new digest, so it is read; the old entry goes.
    changed = next(p for p in manifest["files"] if p.startswith("sft/"))
    manifest["files"][changed] = "0" * 64
    lengths.of_build(BuildFolder(sample_build.out, manifest=manifest), memo=memo)
    assert [str(p.relative_to(sample_build.out)) for p in read] == [changed]
    now = sorted(lengths.Memo.load(memo).entries)
    assert len(now) == len(stored) and now != stored


def test_a_damaged_memo_is_ignored_and_rewritten(sample_build: BuildReport, tmp_path: Path) -> None:
    import json

    from builder.report.folder import BuildFolder

    memo = tmp_path / "memo"
    manifest = json.loads((sample_build.out / "manifest.json").read_text())
    build = BuildFolder(sample_build.out, manifest=manifest)
    first = lengths.of_build(build, memo=memo)
    stored = memo / lengths.Memo.FILE
    stored.write_bytes(stored.read_bytes()[:5000])  # cut short: not a zip any more
    assert lengths.Memo.load(memo).entries == {}
    again = lengths.of_build(build, memo=memo)
    assert {k: v.tolist() for k, v in again.chars.items()} == {
        k: v.tolist() for k, v in first.chars.items()
    }
    assert lengths.Memo.load(memo).entries  # written whole again


def test_counts_handed_over_are_used_and_kept_in_the_memo(
    sample_build: BuildReport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files whose counts the build hands over (counted as written) are not read, with or
    without a memo; the memo keeps them, so a rebuild that reuses those files (handing
    nothing over for them) gets the same counts without reading them; a file not handed
    over is read."""
    import json

    from builder.report.folder import BuildFolder

    manifest = json.loads((sample_build.out / "manifest.json").read_text())
    build = BuildFolder(sample_build.out, manifest=manifest)
    expected = {k: v.tolist() for k, v in lengths.of_build(build).chars.items()}
    names = [n for n in build.configs("objective") if n in lengths.TEXT_COLUMNS]
    files = {n: build.files(n) for n in names}
    counted = {}
    for name, paths in files.items():
        at = 0
        whole = np.asarray(expected[name], dtype=np.int32)
        for path in paths:
            rows = sum(len(f) for f in lengths._file_batches(path, lengths.TEXT_COLUMNS[name][:1]))
            counted[str(path.relative_to(build.path))] = whole[at : at + rows]
            at += rows
    left_out = str(files["sft"][0].relative_to(build.path))
    del counted[left_out]

    read: list[str] = []
    real = lengths._file_batches

    def reading(path: Path, columns: list[str]):  # type: ignore[no-untyped-def]
        read.append(str(path.relative_to(build.path)))
        return real(path, columns)

    monkeypatch.setattr(lengths, "_file_batches", reading)
    memo = tmp_path / "memo"
    for kept in (None, memo):
        read.clear()
        found = lengths.of_build(build, memo=kept, counted=counted)
        assert {k: v.tolist() for k, v in found.chars.items()} == expected
        assert read == [left_out]
    read.clear()
    again = lengths.of_build(build, memo=memo)  # a rebuild: nothing handed over
    assert {k: v.tolist() for k, v in again.chars.items()} == expected
    assert read == []
