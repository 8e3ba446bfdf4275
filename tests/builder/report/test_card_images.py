"""The card's charts: PNG files in ``images/``, listed in the manifest with their sha256,
shown by the card, ignored by ``datasets`` (every config still loads, no config more)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import pytest

from builder.config import BuildConfig
from builder.pipeline import BuildReport, build
from builder.report import card_charts, card_images

from .conftest import SAMPLE_EPISODES

PNG = b"\x89PNG\r\n\x1a\n"


def test_images_are_listed_and_shown(sample_build: BuildReport) -> None:
    folder = sample_build.out
    manifest = json.loads((folder / "manifest.json").read_text())
    images = {p: d for p, d in manifest["files"].items() if p.startswith("images/")}
    assert sorted(images) == [f"images/{n}.png" for n in sorted(card_images.CHARTS)]
    card = (folder / "README.md").read_text()
    for path, digest in images.items():
        data = (folder / path).read_bytes()
        assert data.startswith(PNG) and 2_000 < len(data) < 100_000
        assert hashlib.sha256(data).hexdigest() == digest
        assert f"]({path})" in card  # a relative link: the Hub shows it from the repository
    assert sorted(
        p.relative_to(folder).as_posix() for p in (folder / "images").iterdir()
    ) == sorted(images)


def test_datasets_loads_every_config_and_finds_no_image_config(sample_build: BuildReport) -> None:
    import datasets

    folder = str(sample_build.out)
    manifest = json.loads((sample_build.out / "manifest.json").read_text())
    with_rows = sorted(n for n, m in manifest["configs"].items() if sum(m["rows"].values()))
    assert sorted(datasets.get_dataset_config_names(folder)) == with_rows
    for name in ("sft", "dpo", "episodes"):
        loaded = datasets.load_dataset(folder, name)
        rows = manifest["configs"][name]["rows"]
        assert {s: len(d) for s, d in loaded.items()} == {s: n for s, n in rows.items() if n}
        assert all("image" not in d.features for d in loaded.values())


def test_a_cached_rebuild_reuses_the_images_without_drawing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = BuildConfig(
        episodes=(str(SAMPLE_EPISODES),),
        out=tmp_path / "a" / "dataset",
        rejects=tmp_path / "a" / "rejects.jsonl",
        cache_dir=tmp_path / "cache",
    )
    first = build(config)

    def no_drawing(name: str, data: object) -> bytes:
        raise AssertionError(f"drew the card's {name} chart again")

    monkeypatch.setattr(card_charts, "draw_chart", no_drawing)
    second = build(replace(config, out=tmp_path / "b" / "dataset"))
    for name in card_images.CHARTS:
        relative = f"images/{name}.png"
        assert (second.out / relative).read_bytes() == (first.out / relative).read_bytes()
    assert second.manifest["files"] == first.manifest["files"]


def test_the_card_has_no_image_section_without_images() -> None:
    assert card_images.card_section({"sft/train-0.parquet": "x"}) == []


def test_a_chart_with_nothing_to_count_says_so() -> None:
    """A build without rejects or failed checks: the rejects chart says "none" in one short
    line rather than drawing an empty axis with a zero bar."""
    from io import BytesIO

    import numpy as np
    from PIL import Image

    def image(png: bytes) -> np.ndarray:
        assert png.startswith(PNG)
        return np.asarray(Image.open(BytesIO(png)).convert("RGB"))

    def has_a_bar(pixels: np.ndarray) -> bool:
        return bool((pixels == np.array((0x3B, 0x6E, 0xA8), dtype=np.uint8)).all(axis=2).any())

    empty = image(card_charts.draw_chart("rejects", {"rejects": {}}))
    some = image(card_charts.draw_chart("rejects", {"rejects": {"bad_json": 2}}))
    assert empty.shape[0] < 80 < some.shape[0]
    assert not has_a_bar(empty) and has_a_bar(some)


def count_drawings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the charts drawn from now on (a memo hit draws none)."""
    drawn: list[str] = []
    real = card_charts.draw_chart

    def counted(name: str, data: object) -> bytes:
        drawn.append(name)
        return real(name, data)  # type: ignore[arg-type]

    monkeypatch.setattr(card_charts, "draw_chart", counted)
    return drawn


def test_each_chart_is_drawn_again_only_when_its_numbers_change(
    sample_build: BuildReport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest = json.loads((sample_build.out / "manifest.json").read_text())
    memo = tmp_path / "memo"
    folder = tmp_path / "folder"
    import shutil

    shutil.copytree(sample_build.out, folder)
    first = card_images.write_card_images(folder, manifest, memo)
    drawn = count_drawings(monkeypatch)
    assert card_images.write_card_images(folder, manifest, memo) == first and drawn == []
    manifest["rejects"]["by_kind"]["bad_json"] = (
        manifest["rejects"]["by_kind"].get("bad_json", 0) + 7
    )
    again = card_images.write_card_images(folder, manifest, memo)
    assert drawn == ["rejects"]
    assert again["images/rejects.png"] != first["images/rejects.png"]
    assert {k: v for k, v in again.items() if "rejects" not in k} == {
        k: v for k, v in first.items() if "rejects" not in k
    }
    assert len(list(memo.glob("*.png"))) == len(card_images.CHARTS)  # the old one pruned


def test_every_chart_is_drawn_again_by_another_pillow_or_other_fonts(
    sample_build: BuildReport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    import PIL

    from builder.report import card_png

    manifest = json.loads((sample_build.out / "manifest.json").read_text())
    memo, folder = tmp_path / "memo", tmp_path / "folder"
    shutil.copytree(sample_build.out, folder)
    card_images.write_card_images(folder, manifest, memo)
    assert PIL.__version__ in card_png.renderer()
    drawn = count_drawings(monkeypatch)
    for renderer in ("pillow 0.0, fonts abc", "pillow 0.0, fonts def"):
        monkeypatch.setattr(card_images, "_drawing", lambda r=renderer: r)
        card_images.write_card_images(folder, manifest, memo)
        assert sorted(drawn) == sorted(card_images.CHARTS)
        drawn.clear()


@pytest.mark.parametrize("damage", ["truncated", "overwritten"])
def test_a_damaged_image_in_the_memo_is_drawn_again(
    sample_build: BuildReport, tmp_path: Path, damage: str
) -> None:
    # A build stopped while storing an image, or a disk that flipped bytes: the memo's copy
    # is not trusted, and the card gets the image a clean build draws.
    import shutil

    manifest = json.loads((sample_build.out / "manifest.json").read_text())
    memo, folder = tmp_path / "memo", tmp_path / "folder"
    shutil.copytree(sample_build.out, folder)
    first = card_images.write_card_images(folder, manifest, memo)
    (stored,) = memo.glob("*-funnel.png")
    data = bytearray(stored.read_bytes())
    if damage == "truncated":
        del data[1000:]
    else:
        data[len(data) // 2] ^= 0xFF
    stored.write_bytes(bytes(data))
    assert card_images.write_card_images(folder, manifest, memo) == first
    assert stored.read_bytes() == (folder / "images" / "funnel.png").read_bytes()
    assert not [p for p in memo.iterdir() if p.name.startswith(".")]  # no partial file left
