"""``builder.engine.no_pandas``: pyarrow is told pandas is absent without importing it, and
still imports it for what needs it; the build command and its workers do so."""

from __future__ import annotations

import sys
from pathlib import Path

from builder.engine import LocalEngine
from tests.command_probe import last_json, sample_build

AFTER_THE_PROBE = """
import json, sys
from builder.engine.no_pandas import arrow_without_pandas
import pyarrow as pa

arrow_without_pandas()
seen = {"typed rows": None}
pa.array([("a", 1)], type=pa.struct([("s", pa.string()), ("i", pa.int64())]))
seen["typed rows"] = "pandas" in sys.modules
table = pa.table({"x": pa.array([1, 2], pa.int64())})
frame = table.to_pandas()  # needs pandas: pyarrow imports it now
seen["to_pandas"] = frame["x"].tolist()
import pandas as pd

cat = pd.DataFrame({"c": pd.Categorical(["a", "b", "a"])})
seen["from_pandas"] = str(pa.Table.from_pandas(cat, preserve_index=False).schema.field("c").type)
seen["series"] = str(pa.array(cat["c"]).type)  # read as pandas again
print(json.dumps(seen))
"""


def test_pyarrow_builds_typed_arrays_without_pandas_and_imports_it_when_needed() -> None:
    seen = dict(last_json(AFTER_THE_PROBE))
    assert seen["typed rows"] is False
    assert seen["to_pandas"] == [1, 2]
    # pandas imported before the probe (which then does nothing): the same answers
    reference = dict(last_json("import pandas\n" + AFTER_THE_PROBE))
    assert reference["typed rows"] is True
    assert str(seen["from_pandas"]).startswith("dictionary<")
    assert (seen["from_pandas"], seen["series"]) == (reference["from_pandas"], reference["series"])


def test_without_the_probe_pyarrow_imports_pandas_for_the_same_rows() -> None:
    """What the probe saves (≈ 0.4 s a process); if pyarrow stops doing this, the probe
    can go."""
    code = AFTER_THE_PROBE.replace("arrow_without_pandas()\n", "")
    assert last_json(code)["typed rows"] is True


def pandas_after_typed_rows() -> bool:
    import pyarrow as pa

    pa.array(["x"], type=pa.string())
    return "pandas" in sys.modules


def test_an_ingest_worker_builds_arrays_without_importing_pandas() -> None:
    engine = LocalEngine(1)
    try:
        assert list(engine.map(pandas_after_typed_rows, [()])) == [False]
    finally:
        engine.close()


IMPORTS_INSIDE = """
import json, sys
from builder.engine.no_pandas import arrow_without_pandas, imports_without_pandas
import pyarrow
{probe}
with imports_without_pandas():
    import pyarrow.dataset  # imports pandas on the way, if it can
inside = "pandas" in sys.modules
import pandas  # after the block, as before it
print(json.dumps([inside, "pandas" in sys.modules]))
"""


def test_imports_find_no_pandas_inside_the_block_only_where_pyarrow_was_told() -> None:
    assert last_json(IMPORTS_INSIDE.format(probe="arrow_without_pandas()")) == [False, True]
    # a library caller's process (not told): the block changes nothing
    assert last_json(IMPORTS_INSIDE.format(probe="")) == [True, True]


def test_the_command_reading_a_sessions_database_imports_no_pandas(tmp_path: Path) -> None:
    """The sample's build reads its sessions through ADBC, whose DB-API imports
    ``pyarrow.dataset``, which imports pandas (≈ 0.15 s) unless told it is absent."""
    output, pandas_imported = sample_build(tmp_path, '"pandas" in sys.modules')
    assert "sessions" in output  # the sample's sessions were read
    assert pandas_imported is False
