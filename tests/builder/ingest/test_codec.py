"""``builder.ingest.codec``: a batch's share of each file it spans."""

from __future__ import annotations

import orjson
import pyarrow as pa

from builder.ingest.codec import batch_from_record_batches, batch_to_record_batches
from builder.ingest.files import normalize_batch
from builder.sources.inputs import SourceLine
from samples.episodes import generate_episodes


def test_a_batch_cut_by_file_gives_each_file_its_rows() -> None:
    episodes = [orjson.dumps(e) for e in generate_episodes(5, seed=11)]
    lines = [
        SourceLine("a.jsonl", 1, episodes[0]),
        SourceLine("a.jsonl", 3, episodes[1]),
        SourceLine("b.jsonl", 1, b"{not json"),  # a file whose share is one reject
        SourceLine("c.jsonl", 2, episodes[2]),
        SourceLine("c.jsonl", 4, b"[]"),
        SourceLine("c.jsonl", 5, episodes[3]),
        SourceLine("a.jsonl", 9, episodes[4]),  # a path met again later is a share of its own
    ]
    batch = normalize_batch(lines, 4096)
    shares = list(batch.by_file([line.path for line in lines]))
    assert [path for path, _ in shares] == ["a.jsonl", "b.jsonl", "c.jsonl", "a.jsonl"]
    assert [len(share.outcomes) for _, share in shares] == [2, 1, 3, 1]
    assert [o for _, share in shares for o in share.outcomes] == batch.outcomes
    for name, table in batch.tables.items():
        parts = [share.tables[name] for _, share in shares]
        assert pa.concat_tables(parts).equals(table), name
    for path, share in shares:
        # the codec checks every table's rows against the outcomes' counts
        decoded = batch_from_record_batches(batch_to_record_batches(share))
        assert decoded.outcomes == share.outcomes
        files = set(decoded.tables["episodes"].column("source_file").to_pylist())
        assert files <= {path}
    only = list(batch.by_file(["x.jsonl"] * len(lines)))
    assert only == [("x.jsonl", batch)]
