"""An exact similarity join on word 3-gram sets: every pair of texts whose Jaccard reaches
a threshold is found, none is missed, and none below it is reported.

Candidates come from prefix filtering (Chaudhuri et al. 2006; Bayardo et al. 2007): order
every text's n-grams from the rarest to the most common; two sets with Jaccard ≥ t must
share one of the first ``|x| - ceil(t·|x|) + 1`` n-grams of each, and their sizes may
differ by a factor of at most ``t``. Rare n-grams are short posting lists, so the
candidates are few next to all pairs. The positional filter (``_matches``) then drops those
whose shared n-grams cannot reach the threshold from where they sit, a bound from the
texts' 256-bit signatures (``_bounded``) those that lack too many of each other's n-grams,
and the rest is measured exactly (a set intersection of hashed n-grams, in Polars). Nothing
here is estimated: the guarantee holds for every input, not with a probability, which
MinHash LSH cannot give (the two are compared in ``docs/performance.md``, Choosing the
near-duplicate finder).

``components`` needs only the connected groups, not every pair: it makes the candidates a
block of rows at a time (rows scattered, not consecutive), measures them in rounds,
strongest first (most shared prefix n-grams), and drops before each round the candidates
whose two texts are already joined, so a dense cluster costs about one measurement per
member and memory follows the block, not the square of the largest cluster
(``docs/performance.md``, Held-out integrity).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import polars as pl

from builder.derive.splits.shingles import ngram_frame

NGRAM = 3
ROUND = 2_000_000  # candidates measured per round of ``components``
BLOCK_PAIRS = 4_000_000  # prefix matches joined at once (``components``, ``nearest``)
NEAREST_FIRST = 8  # candidates of a row measured before the rest (``nearest``)
SIGNATURE_WORDS = 4  # a text's signature: 256 bits, one set per n-gram (``signatures``)
# A threshold times a size can land just past the integer it stands for (0.56 × 25 is
# 14.000000000000002); the filters allow this much so that no pair at the threshold is lost.
EPSILON = 1e-9
PAIRS = {"a": pl.UInt32, "b": pl.UInt32, "similarity": pl.Float64}


def hashed_ngrams(texts: pl.Series, n: int = NGRAM) -> pl.DataFrame:
    """``row``, ``h``: the distinct hashed n-grams of each text (64-bit hashes: a collision
    between two n-grams of one pair is vanishingly rare, and could only raise a similarity by
    one n-gram)."""
    return (
        ngram_frame(texts, n)
        .select("row", h=pl.col("gram").hash(seed=0x5EED))
        .unique(maintain_order=True)
    )


def _prefixes(grams: pl.DataFrame, threshold: float) -> pl.DataFrame:
    """``row``, ``h``, ``size``, ``rank``: each text's prefix n-grams and their place in its
    n-grams ordered from the rarest."""
    sizes = grams.group_by("row").len("size")
    frequency = grams.group_by("h").len("df")
    kept = pl.col("size") - (pl.col("size") * threshold - EPSILON).ceil() + 1
    return (
        grams.join(frequency, on="h")
        .join(sizes, on="row")
        .sort("row", "df", "h")
        .with_columns(rank=pl.int_range(pl.len()).over("row"))
        .filter(pl.col("rank") < kept)
        .select("row", "h", pl.col("size").cast(pl.Int64), "rank")
    )


def _matches(
    left: pl.LazyFrame,
    right: pl.LazyFrame,
    threshold: float,
    pair: pl.Expr,
    bits: pl.DataFrame,
    label: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """``a`` (a ``left`` row), ``b`` (a ``right`` row), ``shared`` (prefix n-grams in
    common), their sizes and ``reach`` (the most n-grams they can share), strongest first:
    every pair that ``pair`` admits and that may reach ``threshold`` by the positional filter
    and by the texts' ``bits`` (``signatures``: ``_bounded``); with ``label``, only pairs
    whose rows it labels apart.

    Besides the sizes (Jaccard ≥ t needs each size within a factor t of the other), the
    positional filter (Xiao et al. 2008): the n-grams two texts share up to their last
    shared prefix n-gram are exactly their shared prefix n-grams (any common n-gram before it
    lies in both prefixes), so the overlap is at most ``shared`` plus the fewer n-grams
    either text has after it, and Jaccard ≥ t needs an overlap of t / (1 + t) of the two
    sizes."""
    needed = threshold / (1 + threshold) * (pl.col("size") + pl.col("size_b")) - EPSILON
    # A pair's first shared prefix n-gram must pass the bound alone, and a later one's is
    # lower still: the n-grams that pass are the first of the pair's shared ones, and the
    # bound over them holds as it does over all.
    alone = 1 + pl.min_horizontal(
        pl.col("size") - 1 - pl.col("rank"), pl.col("size_b") - 1 - pl.col("rank_b")
    )
    if label is not None:
        # each side labelled before the join (a join of prefix rows, not of matches), so
        # the matches of texts already joined are dropped by the join's own filter
        left, right = (side.join(label.lazy(), on="row") for side in (left, right))
        pair = pair & (pl.col("label") != pl.col("label_b"))
    joined = left.join(right, on="h", suffix="_b").filter(
        pair
        & (pl.col("size_b") >= threshold * pl.col("size") - EPSILON)
        & (pl.col("size") >= threshold * pl.col("size_b") - EPSILON)
        & (alone >= needed)
    )
    joined = joined.rename({"row": "a", "row_b": "b"})
    counted = joined.group_by("a", "b").agg(
        shared=pl.len(),
        size=pl.col("size").first(),
        size_b=pl.col("size_b").first(),
        last=pl.col("rank").max(),
        last_b=pl.col("rank_b").max(),
    )
    after = pl.min_horizontal(
        pl.col("size") - 1 - pl.col("last"), pl.col("size_b") - 1 - pl.col("last_b")
    )
    reachable = counted.with_columns(reach=pl.col("shared") + after).filter(
        pl.col("reach") >= needed
    )
    return (
        _bounded(reachable, bits)
        .filter(pl.col("reach") >= needed)
        .select("a", "b", "shared", "size", "size_b", "reach")
        .collect(engine="streaming")
        .sort("shared", "a", "b", descending=[True, False, False])
    )


def signatures(grams: pl.DataFrame) -> pl.DataFrame:
    """``row``, ``s0`` … : each text's signature of ``64 · SIGNATURE_WORDS`` bits, one set
    for each of its n-grams (the bit its hash names)."""
    bit = (pl.col("h") % (64 * SIGNATURE_WORDS)).cast(pl.UInt32)
    powers = pl.lit(pl.Series([1 << k for k in range(64)], dtype=pl.UInt64))
    words = [
        powers.gather((bit % 64).filter(bit // 64 == w)).bitwise_or().fill_null(0).alias(f"s{w}")
        for w in range(SIGNATURE_WORDS)
    ]
    # cast: of no n-grams at all, the words' type would be unknown
    return (
        grams.group_by("row").agg(words).cast({f"s{w}": pl.UInt64 for w in range(SIGNATURE_WORDS)})
    )


def _bounded(pairs: pl.LazyFrame, bits: pl.DataFrame) -> pl.LazyFrame:
    """``pairs`` (``a``, ``b``, ``size``, ``size_b``, ``reach``) with ``reach`` lowered to
    what their signatures allow. A bit set in a's signature and not in b's was set by an
    n-gram of a that b lacks, and two such bits by two such n-grams, so a has at least as
    many n-grams that b lacks as it has such bits: they share at most ``size`` less those
    (and at most ``size_b`` less b's own). A cheap bound, exact like the others: most
    candidates that share a prefix n-gram but stay below the threshold fail it, and are
    never measured."""
    words = [f"s{w}" for w in range(SIGNATURE_WORDS)]
    ours = bits.lazy().rename({"row": "a"})
    theirs = bits.lazy().rename({"row": "b", **{w: f"{w}_b" for w in words}})
    only_a = pl.sum_horizontal((pl.col(w) & ~pl.col(f"{w}_b")).bitwise_count_ones() for w in words)
    only_b = pl.sum_horizontal((pl.col(f"{w}_b") & ~pl.col(w)).bitwise_count_ones() for w in words)
    at_most = pl.min_horizontal(
        "reach", pl.col("size") - only_a.cast(pl.Int64), pl.col("size_b") - only_b.cast(pl.Int64)
    )
    return (
        pairs.join(ours, on="a", maintain_order="left")
        .join(theirs, on="b", maintain_order="left")
        .with_columns(reach=at_most)
        .drop(words + [f"{w}_b" for w in words])
    )


def measure(pairs: pl.DataFrame, sets: pl.DataFrame) -> pl.DataFrame:
    """``pairs`` (``a``, ``b``) with their exact ``similarity``; ``sets``: ``row``, ``h`` (a
    list per row)."""
    left = sets.rename({"row": "a", "h": "ha"})
    right = sets.rename({"row": "b", "h": "hb"})
    shared = pl.col("ha").list.set_intersection("hb").list.len()
    union = pl.col("ha").list.len() + pl.col("hb").list.len() - shared
    return (
        pairs.select("a", "b")
        .join(left, on="a")
        .join(right, on="b")
        .select("a", "b", similarity=shared / union)
        .cast(PAIRS)
    )


def set_lists(grams: pl.DataFrame) -> pl.DataFrame:
    return grams.group_by("row").agg(pl.col("h"))


def nearest(grams: pl.DataFrame, floor: float, left: pl.Series, right: pl.Series) -> pl.DataFrame:
    """Each ``left`` row's most similar other ``right`` row (``a``, ``b``, ``similarity``;
    of equals, the smallest ``b``), where one reaches ``floor``, in ``a`` order.

    The candidates are made a block of ``left`` rows at a time, so memory follows the block.
    Each row's ``NEAREST_FIRST`` strongest candidates are measured first, and the best of
    them bounds the rest: the size filter and the candidates' ``reach`` (positional and
    signature bounds) drop every candidate that cannot reach it, so a row with a near-copy
    costs a few measurements, not one per candidate."""
    sets, bits = set_lists(grams), signatures(grams)
    prefix = _prefixes(grams, floor)
    ours = prefix.filter(pl.col("row").is_in(left.implode()))
    theirs = prefix.filter(pl.col("row").is_in(right.implode()))
    if not ours.height or not theirs.height:
        return pl.DataFrame(schema=PAIRS)
    found = []
    for block in _blocks_of(ours, theirs, int(ours.get_column("row").max()) + 1):
        pairs = _matches(block, theirs.lazy(), floor, pl.col("row") != pl.col("row_b"), bits)
        strongest = pairs.group_by("a", maintain_order=True).head(NEAREST_FIRST)
        measured = measure(strongest, sets)
        best = measured.group_by("a").agg(at_least=pl.col("similarity").max())
        bar = pl.max_horizontal(pl.col("at_least").fill_null(floor), pl.lit(floor)) - EPSILON
        rest = (
            pairs.join(strongest.select("a", "b"), on=["a", "b"], how="anti")
            .join(best, on="a", how="left")
            .filter(
                (pl.col("size_b") >= bar * pl.col("size"))
                & (pl.col("size") >= bar * pl.col("size_b"))
                & (pl.col("reach") >= bar / (1 + bar) * (pl.col("size") + pl.col("size_b")))
            )
        )
        found += [measured, measure(rest, sets)]
    return (
        pl.concat(found)
        .filter(pl.col("similarity") >= floor)
        .sort("a", "similarity", "b", descending=[False, True, False])
        .group_by("a", maintain_order=True)
        .first()
    )


def labels(rows: int) -> pl.DataFrame:
    """Every row its own group."""
    return pl.DataFrame(
        {"row": range(rows), "label": range(rows)}, schema={"row": pl.UInt32, "label": pl.UInt32}
    )


def components(
    grams: pl.DataFrame,
    rows: int,
    threshold: float,
    start: pl.DataFrame | None = None,
    among: pl.Series | None = None,
) -> pl.DataFrame:
    """``row``, ``label``: the group of each of ``rows`` texts (the smallest row joined to it,
    transitively, through pairs at or above ``threshold``). ``start``: groups already made
    (``row``, ``label``, as ``connect`` makes them), which the pairs join further; ``among``:
    only the pairs with a row of it join.

    The candidates are made a block of rows at a time, each block about ``BLOCK_PAIRS``
    prefix matches, so memory follows the block, not the square of a cluster's size. A
    block's pairs whose two texts are already joined are dropped before they are counted,
    and the rest are measured in rounds, strongest first (most shared prefix n-grams), the
    pairs joined by an earlier round dropped again; every pair that may reach ``threshold``
    is measured unless its texts are joined, so the groups are exactly those of measuring
    every candidate."""
    label = labels(rows) if start is None else start
    prefix = _prefixes(grams, threshold)
    sets, bits = set_lists(grams), signatures(grams)
    for left, right, pair in _component_blocks(prefix, rows, among):
        pending = _matches(left, right, threshold, pair, bits, label).select("a", "b", "shared")
        while pending.height:
            labelled = _unjoined(pending, label)
            batch, pending = labelled.head(ROUND), labelled.slice(ROUND).select(pending.columns)
            strong = measure(batch, sets).filter(pl.col("similarity") >= threshold)
            label = _merge(label, strong)
    return label


def _component_blocks(
    prefix: pl.DataFrame, rows: int, among: pl.Series | None
) -> Iterator[tuple[pl.LazyFrame, pl.LazyFrame, pl.Expr]]:
    """The candidate joins of ``components``: ``(left, right, pair)``, a block of ``left``
    rows each. Every pair once: ``a`` before ``b`` in the blocks' scrambled order, or with
    ``among``, ``a`` of it and ``b`` any other row (a ``b`` of it too only after ``a``)."""
    row, other = pl.col("row"), pl.col("row_b")
    if among is None:
        # Blocks follow a scrambled order of the rows: texts arrive sorted, so a block of
        # consecutive rows would hold one template's paraphrases, and every pair among them
        # would be measured before any could be dropped as joined. A block of scattered rows
        # joins each of its groups to the rest of the bank first.
        ordered = _scrambled(prefix)
        order, later_order = pl.col("order"), pl.col("order_b")
        later = pl.len().over("h") - order.rank("ordinal").over("h")
        for first, last in _cut(ordered.select(row="order", matches=later), rows):
            block = ordered.lazy().filter(order.is_between(first, last, closed="left"))
            yield block, ordered.lazy().filter(order > first), order < later_order
        return
    ids = among.implode()
    pair = (row != other) & ~(other.is_in(ids) & (other < row))
    for block in _blocks_of(prefix.filter(row.is_in(ids)), prefix, rows):
        yield block, prefix.lazy(), pair


def _scrambled(prefix: pl.DataFrame) -> pl.DataFrame:
    """``prefix`` with ``order``: each row's place (0, 1, …) in a fixed pseudo-random order
    of its rows (by a hash, ties by row: the groups found never depend on it)."""
    rows = prefix.select("row").unique()
    shuffled = rows.sort(pl.col("row").hash(seed=0x5C4A), "row")
    return prefix.join(shuffled.with_row_index("order"), on="row")


def _blocks_of(ours: pl.DataFrame, theirs: pl.DataFrame, rows: int) -> Iterator[pl.LazyFrame]:
    """``ours`` (prefix n-grams of some rows) a block of rows at a time, each with about
    ``BLOCK_PAIRS`` matches in ``theirs``; the rows of a block scattered (``_scrambled``)."""
    ordered = _scrambled(ours)
    fan = ordered.join(theirs.group_by("h").len("matches"), on="h")
    order = pl.col("order")
    for first, last in _cut(fan.select(row="order", matches="matches"), rows):
        block = ordered.lazy().filter(order.is_between(first, last, closed="left"))
        yield block.select(ours.columns)


def _cut(matches: pl.DataFrame, rows: int) -> list[tuple[int, int]]:
    """Consecutive row ranges ``[first, last)`` covering ``rows``, each holding about
    ``BLOCK_PAIRS`` of ``matches`` (``row``, ``matches``: one row's, or part of them)."""
    starts = (
        matches.group_by("row")
        .agg(pl.col("matches").cast(pl.Int64).sum())
        .sort("row")
        .with_columns(block=(pl.col("matches").cum_sum() - pl.col("matches")) // BLOCK_PAIRS)
        .group_by("block")
        .agg(pl.col("row").min())
        .get_column("row")
        .sort()
        .to_list()
    )
    bounds = [0, *starts[1:], rows]
    return list(itertools.pairwise(bounds))


def _unjoined(pairs: pl.DataFrame, label: pl.DataFrame) -> pl.DataFrame:
    """``pairs`` (``a``, ``b``) whose two rows carry different labels."""
    return (
        pairs.join(label.rename({"row": "a", "label": "la"}), on="a", maintain_order="left")
        .join(label.rename({"row": "b", "label": "lb"}), on="b", maintain_order="left")
        .filter(pl.col("la") != pl.col("lb"))
    )


def _merge(label: pl.DataFrame, edges: pl.DataFrame) -> pl.DataFrame:
    """``label`` with the groups that ``edges`` (``a``, ``b``) join made one, each labelled
    with its smallest row (the smallest of the labels it joins). Only the labels the edges
    touch are propagated, not every edge found so far."""
    touched = _unjoined(edges.select("a", "b"), label).select(a="la", b="lb").unique()
    if not touched.height:
        return label
    ends = pl.concat([touched.get_column("a"), touched.get_column("b")]).unique().sort()
    merged = _propagate(pl.DataFrame({"row": ends, "label": ends}), touched)
    renamed = merged.rename({"row": "label", "label": "new"})
    joined = label.join(renamed, on="label", how="left", maintain_order="left")
    return joined.select("row", label=pl.coalesce("new", "label"))


def connect(rows: int, edges: pl.DataFrame) -> pl.DataFrame:
    """``row``, ``label``: the groups of ``rows`` rows joined by ``edges`` (``a``, ``b``)."""
    if not edges.height:
        return labels(rows)
    return _propagate(labels(rows), edges.select("a", "b").cast(pl.UInt32))


def _propagate(label: pl.DataFrame, edges: pl.DataFrame) -> pl.DataFrame:
    """Every row labelled with the smallest row it is connected to (label propagation over
    the component graph, which converges in a few passes since labels jump along it)."""
    both = pl.concat([edges.select("a", "b"), edges.select(a="b", b="a")])
    while True:
        spread = (
            both.join(label.rename({"row": "a"}), on="a")
            .group_by(row="b")
            .agg(pl.col("label").min().alias("new"))
        )
        updated = label.join(spread, on="row", how="left").select(
            "row", label=pl.min_horizontal("label", pl.col("new").fill_null(pl.col("label")))
        )
        # pointer jumping: a label takes its own label's label
        updated = (
            updated.join(updated.rename({"row": "label", "label": "hop"}), on="label", how="left")
            .select("row", label=pl.min_horizontal("label", "hop"))
            .sort("row")
        )
        if updated.get_column("label").equals(label.get_column("label")):
            return updated
        label = updated
