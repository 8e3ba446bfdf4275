"""The reference executor with the GRPO reward adapter: the captured answer scores 1.0, a
wrong one 0.0, code that runs away scores 0.0; live pandas values hash as captured."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pandas as pd
import pytest

from builder.contract.hashing import value_hash
from builder.contract.rewards import make_outcome_reward
from examples.executor import code_of, run


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    pd.DataFrame({"city": ["Oslo", "Lima", "Oslo"], "price": [10.0, 20.5, 30.0]}).to_csv(
        tmp_path / "sales.csv", index=False
    )
    return tmp_path


def assistant(code: str) -> list[dict[str, str]]:
    return [{"role": "assistant", "content": f"Let me compute it.\n```python\n{code}\n```"}]


GROUPED = (
    "import pandas as pd\n"
    "df = pd.read_csv('sales.csv')\n"
    "submit(df.groupby('city', as_index=False)['price'].mean())"
)


@pytest.mark.parametrize("precision", [None, 2])
def test_the_captured_answer_scores_one_and_a_wrong_one_zero(data_dir: Path, precision) -> None:
    frame = pd.read_csv(data_dir / "sales.csv")
    captured = value_hash(frame.groupby("city", as_index=False)["price"].mean(), precision)
    reward = make_outcome_reward(partial(run, data_dir=data_dir, timeout=3))
    completions = [
        assistant(GROUPED),
        assistant("import pandas as pd\nsubmit(pd.read_csv('sales.csv')['price'].sum())"),
        assistant("while True:\n    pass"),  # runs until the timeout
        [{"role": "assistant", "content": "I cannot answer."}],
    ]
    scores = reward(
        prompts=[None] * 4,
        completions=completions,
        expected_final_answer_hash=[captured] * 4,
        hash_precision=[precision] * 4,
    )
    assert scores == [1.0, 0.0, 0.0, 0.0]


@pytest.mark.parametrize(
    "arguments",
    [json.dumps({"code": "submit(6 * 7)"}), {"code": "submit(6 * 7)"}],
    ids=["as stored", "as TRL parses a generated call"],
)
def test_tool_calls_run_too(data_dir: Path, arguments: object) -> None:
    call = {
        "id": "call_0",
        "type": "function",
        "function": {"name": "run_python", "arguments": arguments},
    }
    completion = [{"role": "assistant", "content": None, "tool_calls": [call]}]
    assert code_of(completion) == "submit(6 * 7)"
    assert run(completion, data_dir)["answer"].value == 42


def test_limits_stop_runaway_code(data_dir: Path) -> None:
    hog = assistant("x = bytearray(4 * 1024 ** 3)\nsubmit(1)")
    assert run(hog, data_dir, memory_mb=512) == {}
    assert run(assistant("import time\ntime.sleep(5)\nsubmit(1)"), data_dir, timeout=1) == {}
    nan = run(assistant("submit(float('nan'))"), data_dir)["answer"].value
    assert nan != nan  # NaN stays NaN


# Computed with the capture code itself (thajpo/csv-agent at 12eae6b, rounded scheme,
# precision 2): its sandbox's ``submit()`` and the host's ``hash_artifact`` of what it read.
CAPTURED_ANSWERS = [
    ("submit(df.groupby('city')['price'].sum())", None),  # labelled index: string keys
    ("submit({'significant': np.float64(0.01) < 0.05, 'p_value': 0.01})", "02751376035991f2"),
    ("submit(pd.Series([5, 7], index=[2, 10]), key_lines=['x = 1'])", "1f8b21a8373a2f00"),
    ("submit({'x': np.float32(54.321)})", "ee80d3bc97f92651"),
]


@pytest.mark.parametrize(("code", "captured"), CAPTURED_ANSWERS)
def test_answers_score_as_the_capture_side_hashed_them(data_dir: Path, code, captured) -> None:
    if captured is None:  # the host read {"Lima": 20.5, "Oslo": 40.0} back
        captured = value_hash({"Lima": 20.5, "Oslo": 40.0}, 2)
    setup = "import numpy as np\nimport pandas as pd\ndf = pd.read_csv('sales.csv')\n"
    reward = make_outcome_reward(partial(run, data_dir=data_dir, timeout=5))
    scores = reward(
        completions=[assistant(setup + code)],
        expected_final_answer_hash=[captured],
        hash_precision=[2],
    )
    assert scores == [1.0]


def test_an_answer_json_cannot_write_is_not_submitted(data_dir: Path) -> None:
    assert run(assistant("submit({(1, 2): 3})"), data_dir) == {}
