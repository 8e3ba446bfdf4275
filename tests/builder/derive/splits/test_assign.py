"""Split groups and their assignment, checked against a brute-force pair check that shares
nothing with the builder's index."""

from __future__ import annotations

import random
import re
import unicodedata

import polars as pl
import pytest

from builder.derive.splits import SplitConfig
from builder.derive.splits.assign import PINNED_COLUMNS, QUESTION_COLUMNS, SplitPolicy, assign
from samples.paraphrases import paraphrase, questions

POLICY = SplitPolicy("near_duplicate", 0.5, SplitConfig(0.8, 0.1, 0.1, "test-salt"))


# The scripts written without spaces, by their characters' Unicode names: each such
# character is a word of its own.
UNSPACED_NAMES = (
    "CJK UNIFIED IDEOGRAPH",
    "HIRAGANA",
    "KATAKANA",
    "THAI",
    "LAO",
    "KHMER",
    "MYANMAR",
)


def words(text: str) -> list[str]:
    """Words, written again here from the definition: runs of ``\\w``, a character each in
    the scripts written without spaces."""
    unspaced = "".join(
        f" {c} " if unicodedata.name(c, "").startswith(UNSPACED_NAMES) else c for c in text
    )
    return re.findall(r"\w+", unspaced.lower())


def grams(text: str) -> frozenset[str]:
    """Word 3-grams, written again here from the definition."""
    tokens = words(text)
    if len(tokens) < 3:
        return frozenset([" ".join(tokens)]) if tokens else frozenset()
    return frozenset(" ".join(tokens[i : i + 3]) for i in range(len(tokens) - 2))


def similarity(a: str, b: str) -> float:
    x, y = grams(a), grams(b)
    return len(x & y) / len(x | y) if x | y else 0.0


def frame(items: list[tuple[str, str, str]], weights: list[int] | None = None) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "question_id": [f"q{i:06d}" for i in range(len(items))],
            "text": [t for t, _, _ in items],
            "weight": weights or [1 + i % 4 for i in range(len(items))],
            "dataset": [d for _, d, _ in items],
            "template": [t for _, _, t in items],
        },
        schema=QUESTION_COLUMNS,
    )


def no_pins() -> pl.DataFrame:
    return pl.DataFrame(schema=PINNED_COLUMNS)


def one_word_apart(a: str, b: str) -> bool:
    """Written again here from the definition: one word changed, added or left out, and at
    least four words shared (or the same words, four or more)."""
    x, y = words(a), words(b)
    if len(x) > len(y):
        x, y = y, x
    if len(x) == len(y):
        differ = sum(p != q for p, q in zip(x, y, strict=True))
        return differ <= 1 and len(x) - differ >= 4
    if len(y) - len(x) != 1 or len(x) < 4:
        return False
    return any(y[:i] + y[i + 1 :] == x for i in range(len(y)))


def brute_force_groups(texts: list[str], threshold: float, one_word: bool = True) -> list[int]:
    """Each text's group as its smallest index, joined through every pair at ``threshold``
    (or one word apart, with ``one_word``), by comparing all pairs."""
    parent = list(range(len(texts)))

    def root(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for i in range(len(texts)):
        for j in range(i + 1, len(texts)):
            near = one_word and one_word_apart(texts[i], texts[j])
            if near or similarity(texts[i], texts[j]) >= threshold:
                a, b = root(i), root(j)
                parent[max(a, b)] = min(a, b)
    return [root(i) for i in range(len(texts))]


def leaks(assigned: pl.DataFrame, threshold: float) -> list[tuple[str, str, float]]:
    """Every (held-out, train) pair at or above ``threshold``, by comparing all pairs."""
    trains = assigned.filter(pl.col("split") == "train").get_column("text").to_list()
    held = assigned.filter(pl.col("split") != "train").get_column("text").to_list()
    train_grams = [grams(t) for t in trains]
    found = []
    for text in held:
        mine = grams(text)
        for other, theirs in zip(trains, train_grams, strict=True):
            union = mine | theirs
            if union and len(mine & theirs) / len(union) >= threshold:
                found.append((text, other, len(mine & theirs) / len(union)))
    return found


@pytest.fixture(scope="module")
def templated() -> pl.DataFrame:
    rng = random.Random(7)
    items = questions(1500, seed=7)
    # near-copies: a synonym swapped in a fifth of them
    items += [(paraphrase(t, rng), d, n) for t, d, n in items[::5]]
    return frame(list({t: (t, d, n) for t, d, n in items}.values()))


def test_no_held_out_question_has_a_near_copy_in_train(templated: pl.DataFrame) -> None:
    result = assign(templated, no_pins(), POLICY)
    assigned = result.frame.join(templated, on="question_id")
    assert assigned.filter(pl.col("split") != "train").height > 100
    assert leaks(assigned, 0.5) == []


def test_the_exact_text_split_leaks_on_the_same_questions(templated: pl.DataFrame) -> None:
    """The old policy, for contrast: the brute-force check does find leaks, so the test
    above can fail."""
    policy = SplitPolicy("question", 0.5, POLICY.ratios)
    assigned = assign(templated, no_pins(), policy).frame.join(templated, on="question_id")
    assert len(leaks(assigned, 0.5)) > 10


def test_a_group_joins_only_pairs_at_or_above_the_threshold(templated: pl.DataFrame) -> None:
    """Groups are exactly the connected parts of the brute-force graph of pairs ≥ 0.5."""
    sample = templated.head(400)
    result = assign(sample, no_pins(), POLICY)
    texts = sample.get_column("text").to_list()
    expected: dict[int, set[str]] = {}
    for text, group in zip(texts, brute_force_groups(texts, 0.5), strict=True):
        expected.setdefault(group, set()).add(text)
    got = (
        result.frame.join(sample, on="question_id")
        .group_by("group")
        .agg("text")
        .get_column("text")
        .to_list()
    )
    assert sorted(map(sorted, expected.values())) == sorted(map(sorted, got))


def test_shares_hold_within_two_points(templated: pl.DataFrame) -> None:
    result = assign(templated, no_pins(), POLICY)
    assert result.stats["groups"] >= 500
    rows = result.frame.join(templated, on="question_id")
    total = rows.get_column("weight").sum()
    for split, ratio in POLICY.ratios.shares().items():
        share = rows.filter(pl.col("split") == split).get_column("weight").sum() / total
        assert abs(share - ratio) <= 0.02, (split, share)


def test_a_group_too_large_to_hold_out_goes_to_train() -> None:
    rng = random.Random(3)
    base = "which columns in the sales_2019 dataset have more than 5% missing values?"
    big = [(base + " " * 0, "sales_2019", "t")] + [
        (paraphrase(base, rng) + f" case {i}", "sales_2019", "t") for i in range(60)
    ]
    others = questions(300, seed=3)
    items = big + others
    weights = [1] * len(items)
    result = assign(frame(items, weights), no_pins(), POLICY)
    rows = result.frame.join(frame(items, weights), on="question_id")
    big_splits = rows.filter(pl.col("text").str.contains("sales_2019 dataset have more than 5%"))
    assert set(big_splits.get_column("split")) == {"train"}
    assert result.stats["too_large_groups"] >= 1


def test_the_assignment_depends_on_the_data_alone(templated: pl.DataFrame) -> None:
    shuffled = templated.sample(fraction=1.0, shuffle=True, seed=1)
    a = assign(templated, no_pins(), POLICY).frame.sort("question_id")
    b = assign(shuffled, no_pins(), POLICY).frame.sort("question_id")
    assert a.select("question_id", "split").equals(b.select("question_id", "split"))


def test_new_questions_follow_their_group_and_bridges_are_held_out(
    templated: pl.DataFrame,
) -> None:
    first = assign(templated, no_pins(), POLICY)
    before = first.frame.join(templated, on="question_id")
    pins = before.select("question_id", "text", "split", "reason")
    rng = random.Random(11)
    held = before.filter(pl.col("split") == "test").head(20)
    trains = before.filter(pl.col("split") == "train")
    # near-copies of held-out questions: a synonym swapped
    copies = [(t, paraphrase(t, rng)) for t in held.get_column("text")]
    known = set(templated.get_column("text"))
    copies = [c for t, c in copies if c not in known and similarity(t, c) >= 0.5]
    assert len(copies) >= 10
    # a bridge: the words of a held-out question followed by those of a train question it is
    # not similar to, so it is within 0.5 of neither... unless made of halves: both halves
    bridges = []
    for a in held.get_column("text").to_list()[:5]:
        for b in trains.get_column("text").to_list():
            joined = a + " " + b
            if similarity(joined, a) >= 0.5 and similarity(joined, b) >= 0.5:
                bridges.append(joined)
                break
    fresh = questions(150, seed=99)
    new_items = [(c, None, None) for c in copies] + [(b, None, None) for b in bridges] + fresh
    added = frame(new_items).with_columns(question_id=pl.format("n{}", pl.col("question_id")))
    everything = pl.concat([templated, added])
    second = assign(everything, pins, POLICY)
    after = second.frame.join(everything, on="question_id")
    # no earlier question moved
    moved = pins.join(after.select("question_id", new="split"), on="question_id").filter(
        pl.col("split") != pl.col("new")
    )
    assert moved.height == 0
    # near-copies of test questions are in test (or held out as bridges)
    copied = after.filter(pl.col("text").is_in(copies))
    assert copied.height == len(copies)
    for row in copied.iter_rows(named=True):
        assert row["split"] == "test" or row["reason"] == "bridges_splits", row
    # bridges: excluded and counted
    bridged = after.filter(pl.col("text").is_in(bridges))
    assert bridges and set(bridged.get_column("reason")) == {"bridges_splits"}
    assert second.stats["bridges_splits"] >= len(bridges)
    # and what trains leaks nothing
    training = after.filter(pl.col("reason").is_null())
    assert leaks(training, 0.5) == []
    # assigned again from its own record, reasons included: nothing changes, bridges stay out
    third = assign(everything, after.select("question_id", "text", "split", "reason"), POLICY)
    assert third.frame.equals(second.frame)


def unspaced_questions(count: int, seed: int) -> list[tuple[str, str, str]]:
    """Chinese and Japanese questions from templates, about many datasets, columns and
    measures, a fifth of them again with one character changed (a near-copy)."""
    rng = random.Random(seed)
    templates = [
        "请计算{d}中{c}的{o}。",
        "{d}里{c}这一列的{o}是多少？",
        "对于{d}，请按地区分组后给出{c}的{o}。",
        "{d}のデータで、{c}の{j}を求めてください。",
        "{d}について{c}列の{j}はいくつですか。",
    ]
    measures = "平均值 中位数 标准差 最大值和最小值 缺失值的数量 不同取值的个数 按月份的总和 前十名"
    japanese = "平均値 中央値 標準偏差 最大値 欠損値の数 ユニークな値の数 月ごとの合計 上位十件"
    datasets = [
        a + b for a in "销售人口天气航班股票医院学校电影" for b in ("报表", "记录", "统计表")
    ]
    columns = [a + b for a in "价温收年速客分" for b in "格度入龄率量数"]
    items = [
        (
            rng.choice(templates).format(
                d=rng.choice(datasets),
                c=rng.choice(columns),
                o=rng.choice(measures.split()),
                j=rng.choice(japanese.split()),
            ),
            "d",
            "t",
        )
        for _ in range(count)
    ]
    for text, d, t in items[::5]:
        at = rng.randrange(len(text))
        items.append((text[:at] + rng.choice("数值表格") + text[at + 1 :], d, t))
    return list({t: (t, d, k) for t, d, k in items}.values())


def test_questions_written_without_spaces_are_grouped_by_their_characters() -> None:
    """A question in Chinese or Japanese is compared a character at a time: a near-copy one
    character apart joins its original's group, and the groups are the brute force's."""
    items = unspaced_questions(300, seed=5)
    data = frame(items)
    texts = data.get_column("text").to_list()
    result = assign(data, no_pins(), POLICY)
    group_of = dict(result.frame.join(data, on="question_id").select("text", "group").iter_rows())
    expected = brute_force_groups(texts, 0.5)
    assert len(set(expected)) < len(texts) - 50  # many pairs reach 0.5 here
    pairs = [(i, j) for i in range(len(texts)) for j in range(i) if expected[i] == expected[j]]
    assert all(group_of[texts[i]] == group_of[texts[j]] for i, j in pairs)
    assert len(set(group_of.values())) == len(set(expected))
    assigned = result.frame.join(data, on="question_id")
    assert assigned.filter(pl.col("split") != "train").height > 10
    assert leaks(assigned, 0.5) == []
