"""Decontamination on a planted eval set: exact copies, paraphrases just above and just below
the 8-gram threshold, a short item, unrelated items; the counts are known in advance."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from builder.derive.decontamination import decontaminate, load_evals, parse_eval_spec
from builder.derive.decontamination.evals import EvalSetUnreadable
from builder.derive.decontamination.overlap import PROMPTS

# 20 words: 13 word 8-grams each
TRAIN = [
    "what is the average price of the houses in the housing dataset "
    "that were built before the year 1950 overall",
    "how many passengers in the titanic dataset survived when they travelled in "
    "third class without any family or friends aboard",
    "which weather station in the daily weather file recorded the highest total "
    "rainfall during march 2020 across all the regions",
    "find the median income for each census region after removing the rows "
    "where the income is missing or zero please",
]


def words(text: str) -> list[str]:
    return text.split(" ")


def replaced(text: str, positions: list[int]) -> str:
    w = words(text)
    for p in positions:
        w[p] = f"changed{p}"
    return " ".join(w)


def prompts(texts: list[str], kind: str = "question") -> pl.DataFrame:
    return pl.DataFrame(
        {"kind": [kind] * len(texts), "key": [f"k{i}" for i in range(len(texts))], "text": texts},
        schema=PROMPTS,
    )


def planted() -> list[str]:
    assert all(len(words(t)) == 20 for t in TRAIN)
    return [
        TRAIN[0],  # exact copy: matched
        TRAIN[1].upper(),  # copy in another case: matched (texts are compared lowercased)
        replaced(TRAIN[2], [19]),  # last word changed: 12 of 13 8-grams shared: matched
        # words 6 and 13 changed: every 8-gram holds one of them: none shared
        replaced(TRAIN[3], [6, 13]),
        # word 6 changed: the 8-grams starting at 7..12 avoid it: 6 of 13 shared (46%)
        replaced(TRAIN[0], [6]),
        "an unrelated item about pandas dataframes and how to merge two of them on a key",
        "count the rows",  # short (3 words): one 3-gram, contained in no prompt: not matched
        "survived when they travelled",  # short: inside TRAIN[1]: matched
    ]


def test_the_planted_items_match_exactly_as_the_rule_says(tmp_path: Path) -> None:
    evals = tmp_path / "bench.jsonl"
    evals.write_text(
        "".join(json.dumps({"question": q, "id": i}) + "\n" for i, q in enumerate(planted()))
    )
    [loaded] = load_evals((str(evals),))
    found = decontaminate(prompts(TRAIN), [loaded], 8, 0.5)
    [summary] = found.summary["evals"]
    assert summary["items"] == 8
    assert summary["matched_items"] == 4  # items 0, 1, 2, 7
    matched = {(m["item"]) for m in found.summary["most_matched"]}
    assert matched == {0, 1, 2, 7}
    assert found.questions.sort("question_id").to_dicts() == [
        {"question_id": "k0", "reason": "eval:bench"},
        {"question_id": "k1", "reason": "eval:bench"},
        {"question_id": "k2", "reason": "eval:bench"},
    ]


def test_a_threshold_of_exactly_half_is_not_over_it() -> None:
    text = " ".join(f"w{i}" for i in range(9))  # 2 8-grams
    item = " ".join(f"w{i}" for i in range(8)) + " other"  # shares 1 of its 2
    from builder.derive.decontamination.evals import EvalSet

    found = decontaminate(prompts([text]), [EvalSet("e", "e", "q", (item,))], 8, 0.5)
    assert found.summary["evals"][0]["matched_items"] == 0
    found = decontaminate(prompts([text]), [EvalSet("e", "e", "q", (item,))], 8, 0.49)
    assert found.summary["evals"][0]["matched_items"] == 1


def test_episode_prompts_are_flagged_by_episode() -> None:
    from builder.derive.decontamination.evals import EvalSet

    found = decontaminate(
        prompts(TRAIN, kind="episode"), [EvalSet("e", "e", "q", (TRAIN[3],))], 8, 0.5
    )
    assert found.episodes.to_dicts() == [{"episode_id": "k3", "reason": "eval:e"}]
    assert found.questions.height == 0


def test_eval_sets_are_read_from_jsonl_parquet_and_a_dataset_folder(tmp_path: Path) -> None:
    rows = [{"question": q, "answer": 1} for q in planted()]
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    pl.DataFrame(rows).rename({"question": "prompt"}).write_parquet(tmp_path / "b.parquet")
    datasets = pytest.importorskip("datasets")
    datasets.Dataset.from_list(rows).save_to_disk(str(tmp_path / "c"))
    loaded = load_evals(
        (str(tmp_path / "a.jsonl"), f"{tmp_path / 'b.parquet'}:prompt", str(tmp_path / "c"))
    )
    assert [e.name for e in loaded] == ["a", "b", "c"]
    assert all(e.items == tuple(planted()) for e in loaded)


def test_eval_sets_are_read_in_the_other_shapes_json_and_tables_come_in(tmp_path: Path) -> None:
    """Columns in one JSON object, records under one key, one pretty-printed record, a
    byte-order mark, gzipped JSON Lines, CSV and TSV: each item read, none as a whole file."""
    import gzip

    items = planted()
    records = [{"question": q, "id": i} for i, q in enumerate(items)]
    lines = "".join(json.dumps(r) + "\n" for r in records)
    (tmp_path / "columns.json").write_text(json.dumps({"question": items, "id": [1] * len(items)}))
    (tmp_path / "data.json").write_text(json.dumps({"data": records}, indent=2))
    (tmp_path / "one.json").write_text(json.dumps(records[0], indent=2))
    (tmp_path / "bom.jsonl").write_bytes("\ufeff".encode() + lines.encode())
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "part.jsonl.gz").write_bytes(gzip.compress(lines.encode()))
    pl.DataFrame(records).write_csv(folder / "more.csv")
    (folder / "README.md").write_text("an eval set")
    pl.DataFrame(records).write_csv(tmp_path / "t.tsv", separator="\t")
    names = ("columns.json", "data.json", "one.json", "bom.jsonl", "folder", "t.tsv")
    loaded = load_evals(tuple(str(tmp_path / n) for n in names))
    got = {e.name: e.items for e in loaded}
    whole = tuple(items)
    assert got == {
        "columns": whole,
        "data": whole,
        "one": whole[:1],
        "bom": whole,
        "folder": whole + whole,
        "t": whole,
    }
    (folder / "more.jsonl.zst").write_bytes(b"\x28\xb5\x2f\xfd")
    with pytest.raises(EvalSetUnreadable, match=r"more\.jsonl\.zst: not a kind of file"):
        load_evals((str(folder),))


def test_two_eval_files_of_one_name_are_told_apart(tmp_path: Path) -> None:
    for folder in ("x", "y"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "dev.jsonl").write_text(json.dumps({"question": "q"}) + "\n")
    loaded = load_evals((str(tmp_path / "x/dev.jsonl"), str(tmp_path / "y/dev.jsonl")))
    assert [e.name for e in loaded] == ["dev", "dev-2"]


def test_a_spec_names_its_field_after_a_colon() -> None:
    assert parse_eval_spec("dev.jsonl:prompt") == ("dev.jsonl", "prompt")
    assert parse_eval_spec("dev.jsonl") == ("dev.jsonl", "question")


@pytest.mark.parametrize(
    ("content", "spec_suffix", "says"),
    [
        (None, "", "no such eval file"),
        ('{"prompt": "x"}\n', "", "no field 'question' (fields: prompt)"),
        ('{"question": "x"}\nnot json\n', "", ":2: not JSON"),
    ],
)
def test_an_unreadable_eval_set_is_one_line_naming_the_file(
    tmp_path: Path, content: str | None, spec_suffix: str, says: str
) -> None:
    path = tmp_path / "dev.jsonl"
    if content is not None:
        path.write_text(content)
    with pytest.raises(EvalSetUnreadable) as raised:
        load_evals((str(path) + spec_suffix,))
    message = str(raised.value)
    assert str(path) in message and says in message and "\n" not in message


def test_prompts_matched_a_slice_at_a_time_match_as_all_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from builder.derive.decontamination import overlap
    from builder.derive.decontamination.evals import EvalSet

    evals = [EvalSet("bench", "bench", "q", tuple(planted())), EvalSet("e", "e", "q", (TRAIN[3],))]
    many = prompts([*TRAIN, None, "", *[replaced(t, [5]) for t in TRAIN], *TRAIN])
    whole = decontaminate(many, evals, 8, 0.5)
    for chunk_bytes in (1, 150, 400):  # a prompt a slice; several; slices ending mid-prompt
        monkeypatch.setattr(overlap, "CHUNK_BYTES", chunk_bytes)
        sliced = decontaminate(many, evals, 8, 0.5)
        assert sliced.questions.equals(whole.questions)
        assert sliced.summary == whole.summary
        starts = [start for start, _ in overlap._chunks(many.get_column("text"))]
        assert starts[0] == 0 and starts == sorted(set(starts))
        assert len(starts) > 1
    # TRAIN twice, and three of its variants with word 5 changed: TRAIN[2]'s shares 6 of
    # the 13 8-grams of the one item near it (word 19 changed there): not over half
    assert whole.questions.height == 11
    assert "k8" not in whole.questions.get_column("question_id").to_list()


def test_an_item_in_chinese_is_matched_inside_a_longer_prompt() -> None:
    """Chinese is written without spaces, so its words are its characters: an item copied
    into a prompt, with its last character changed and text around it, is matched; the
    same characters in reverse order are not."""
    from builder.derive.decontamination.evals import EvalSet

    item = "请计算销售报表中每个地区的平均价格并找出最高的地区"  # 25 characters: 18 8-grams
    changed = item[:-1] + "省"  # 17 of 18 shared
    texts = [f"背景：你是一名数据分析师。{changed}，然后画图。", item[::-1]]
    found = decontaminate(prompts(texts), [EvalSet("zh", "zh", "q", (item,))], 8, 0.5)
    assert found.questions.to_dicts() == [{"question_id": "k0", "reason": "eval:zh"}]


def test_invisible_characters_do_not_hide_a_copy() -> None:
    """Soft hyphens and zero-width spaces inside the words of an item (as pages copied from the
    web carry them) are dropped before words are cut: the clean prompt matches the item, and
    a prompt carrying them matches the clean item."""
    from builder.derive.decontamination.evals import EvalSet

    words = [f"word{i}" for i in range(12)]
    clean = " ".join(words)
    marked = " ".join(w[:2] + "\u00ad" + w[2:] + "\u200b" for w in words)
    for prompt, item in ((clean, marked), (marked, clean)):
        found = decontaminate(prompts([prompt]), [EvalSet("web", "web", "q", (item,))], 8, 0.5)
        assert found.questions.to_dicts() == [{"question_id": "k0", "reason": "eval:web"}]


def test_a_normalized_question_matches_its_item_in_any_script() -> None:
    """Question prompts are normalized texts (casefolded: a Greek final sigma becomes σ, ß
    becomes ss, ﬁ is f and i) while eval items and user messages are as written: the copy is
    matched either way."""
    from builder.contract.hashing import normalize_question_text
    from builder.derive.decontamination.evals import EvalSet

    greek = (
        "Ποιος είναι ο μέσος όρος της στήλης τιμής για τους πελάτες της πόλης Αθήνας στον "
        "πίνακα πωλήσεων;"
    )
    german = "Wie groß ist die durchschnittliche Straßenlänge pro Stadt in der Tabelle ﬁnal?"
    for item in (greek, german):
        for prompt in (normalize_question_text(item), item.upper()):
            found = decontaminate(prompts([prompt]), [EvalSet("e", "e", "q", (item,))], 8, 0.5)
            assert found.questions.to_dicts() == [{"question_id": "k0", "reason": "eval:e"}]
