"""An exact similarity join on word 3-gram sets: every pair of texts whose Jaccard reaches
a threshold is found, none is missed, and none below it is reported.

Candidates come from prefix filtering (Chaudhuri et al. 2006; Bayardo et al. 2007): order
every text's n-grams from the rarest to the most common; two sets with Jaccard ≥ t must
share one of the first ``|x| - ceil(t·|x|) + 1`` n-grams of each, and their sizes may differ
by a factor of at most ``t``. Rare n-grams are short posting lists, so the candidates are few
next to all pairs; each is then measured exactly (a set intersection of hashed n-grams, in
Polars). Nothing here is estimated: the guarantee holds for every input, not with a
probability, which MinHash LSH cannot give (``benchmarks/bench_near_duplicates.py``
compares the two).

``components`` needs only the connected groups, not every pair: it measures candidates in
rounds, strongest first (most shared prefix n-grams), and drops before each round the
candidates whose two texts are already joined, so a dense cluster costs about one
measurement per member.
"""

from __future__ import annotations

import polars as pl

from builder.derive.splits.shingles import ngram_frame

NGRAM = 3
ROUND = 2_000_000  # candidates measured per round of ``components``
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
    sizes = grams.group_by("row").len("size")
    frequency = grams.group_by("h").len("df")
    return (
        grams.join(frequency, on="h")
        .join(sizes, on="row")
        .sort("row", "df", "h")
        .with_columns(rank=pl.int_range(pl.len()).over("row"))
        .filter(pl.col("rank") < pl.col("size") - (pl.col("size") * threshold).ceil() + 1)
        .select("row", "h", "size")
    )


def candidates(
    grams: pl.DataFrame,
    threshold: float,
    left: pl.Series | None = None,
    right: pl.Series | None = None,
) -> pl.DataFrame:
    """``a``, ``b``, ``shared`` (prefix n-grams in common), strongest first: every pair that
    may reach ``threshold``; ``a < b``, or with ``left`` and ``right`` (rows), ``a`` from
    ``left`` and ``b`` from ``right``."""
    prefix = _prefixes(grams, threshold).lazy()
    other = prefix
    if left is not None and right is not None:
        prefix = prefix.filter(pl.col("row").is_in(left.implode()))
        other = other.filter(pl.col("row").is_in(right.implode()))
    joined = prefix.join(other, on="h", suffix="_b").filter(
        (pl.col("size_b") >= threshold * pl.col("size"))
        & (pl.col("size") >= threshold * pl.col("size_b"))
        & (pl.col("row") < pl.col("row_b") if left is None else pl.col("row") != pl.col("row_b"))
    )
    return (
        joined.group_by(a="row", b="row_b")
        .agg(shared=pl.len())
        .collect(engine="streaming")
        .sort("shared", "a", "b", descending=[True, False, False])
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


def similar_pairs(
    grams: pl.DataFrame,
    threshold: float,
    left: pl.Series | None = None,
    right: pl.Series | None = None,
) -> pl.DataFrame:
    """Every pair at or above ``threshold`` (of ``left`` × ``right`` when given), measured
    (``PAIRS``)."""
    found = measure(candidates(grams, threshold, left, right), set_lists(grams))
    return found.filter(pl.col("similarity") >= threshold).sort("a", "b")


def labels(rows: int) -> pl.DataFrame:
    """Every row its own group."""
    return pl.DataFrame(
        {"row": range(rows), "label": range(rows)}, schema={"row": pl.UInt32, "label": pl.UInt32}
    )


def components(grams: pl.DataFrame, rows: int, threshold: float) -> pl.DataFrame:
    """``row``, ``label``: the group of each of ``rows`` texts (the smallest row joined to it,
    transitively, through pairs at or above ``threshold``)."""
    edges: list[pl.DataFrame] = []
    label = labels(rows)
    pending = candidates(grams, threshold)
    sets = set_lists(grams)
    while pending.height:
        labelled = (
            pending.join(label.rename({"row": "a", "label": "la"}), on="a")
            .join(label.rename({"row": "b", "label": "lb"}), on="b")
            .filter(pl.col("la") != pl.col("lb"))
        )
        batch, pending = labelled.head(ROUND), labelled.slice(ROUND).select("a", "b", "shared")
        strong = measure(batch, sets).filter(pl.col("similarity") >= threshold)
        edges.append(strong.select("a", "b"))
        label = _propagate(label, pl.concat(edges))
    return label


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
