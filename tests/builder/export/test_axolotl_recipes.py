"""The card's Axolotl configs, exactly as the card shows them, prepare the sample's rows in
Axolotl's own code: in ``sft`` a weight-0 assistant message gets no loss and every weight-1
one does (tool calls reach the template); in ``prm_stepwise`` each step's label is the row's.

Axolotl runs in a venv of its own (``make test`` makes ``.venv-axolotl``; it pins other
releases of ``datasets`` and ``transformers``): the check is ``axolotl_check.py`` there."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from builder.export.recipes import AXOLOTL
from builder.pipeline import BuildReport

ROOT = Path(__file__).resolve().parents[3]
PYTHON = Path(os.environ.get("AXOLOTL_PYTHON", ROOT / ".venv-axolotl" / "bin" / "python"))

if not PYTHON.exists():
    pytest.skip(
        f"Axolotl's venv is not installed ({PYTHON}): `make test` installs it",
        allow_module_level=True,
    )


def card_yaml(card: str) -> dict[str, str]:
    """Config name -> the YAML block the card's Axolotl section shows for it."""
    section = card.split("### Axolotl", 1)[1].split("\n## ", 1)[0]
    found = re.findall(r"^`(\w+)`:\n\n```yaml\n(.*?)```", section, flags=re.S | re.M)
    return dict(found)


def test_the_card_s_axolotl_configs_prepare_the_rows_as_they_mean(
    sample_build: BuildReport, tmp_path: Path
) -> None:
    blocks = card_yaml((sample_build.out / "README.md").read_text(encoding="utf-8"))
    assert list(blocks) == list(AXOLOTL)
    recipes = []
    for name, text in blocks.items():
        recipes.append(tmp_path / f"{name}.yaml")
        recipes[-1].write_text(text, encoding="utf-8")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "AXOLOTL_DO_NOT_TRACK": "1"}
    env.pop("PYTHONPATH", None)
    script = Path(__file__).with_name("axolotl_check.py")
    done = subprocess.run(
        [str(PYTHON), str(script), str(sample_build.out), str(tmp_path), *map(str, recipes)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    for name in AXOLOTL:
        found = report[name]
        assert found["rows"] == found["prepared"] > 0, (name, found)
        assert found["n_bad"] == 0, (name, found)
