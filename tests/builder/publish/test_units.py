"""Versions, changelog, card and plan: the pure parts of a release."""

from __future__ import annotations

import json

import pytest

from builder.publish.changelog import (
    changelog,
    changelog_markdown,
    default_config,
    release_card,
    release_info,
    release_manifest,
)
from builder.publish.plan import (
    ADD,
    UNCHANGED,
    UPDATE,
    LocalFile,
    RemoteFile,
    RemoteState,
    git_blob_id,
    make_plan,
)
from builder.publish.versions import (
    Version,
    VersionError,
    VersionRefused,
    check_new_version,
    latest,
)

# ---------------------------------------------------------------------------- versions


@pytest.mark.parametrize("text", ["1.0", "1", "01.0.0", "1.0.0.0", "x.y.z", "1.0.0-", "", "v"])
def test_not_semver_is_rejected(text: str) -> None:
    with pytest.raises(VersionError, match="not a semantic version"):
        Version.parse(text)


def test_semver_precedence() -> None:
    order = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2"]
    order += ["1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.2.0", "1.10.0", "2.0.0"]
    versions = [Version.parse(v) for v in order]
    assert sorted(reversed(versions)) == versions
    assert Version.parse("v1.2.3") == Version.parse("1.2.3+build.5")
    assert Version.parse("1.2.3").tag == "v1.2.3"


def test_latest_ignores_tags_that_are_not_releases() -> None:
    assert latest(["v1.9.0", "v1.10.0", "nightly", "vX", "2.0.0"]) == (
        Version.parse("1.10.0"),
        "v1.10.0",
    )
    assert latest([]) is None


def test_new_version_must_not_exist_and_must_increase() -> None:
    tags = ["v1.0.0", "v1.1.0"]
    assert check_new_version(Version.parse("1.1.1"), tags) == (Version.parse("1.1.0"), "v1.1.0")
    assert check_new_version(Version.parse("0.1.0"), []) is None
    with pytest.raises(VersionRefused, match="already exists"):
        check_new_version(Version.parse("1.1.0"), tags)
    with pytest.raises(VersionRefused, match="not greater"):
        check_new_version(Version.parse("1.0.5"), tags)
    with pytest.raises(VersionRefused, match="not greater"):
        check_new_version(Version.parse("1.1.0-rc.1"), tags)
    with pytest.raises(VersionRefused, match="already published"):
        check_new_version(Version.parse("1.1.0+rebuild"), tags)


# ---------------------------------------------------------------------------- changelog


def manifest(schema: str = "1.0.0", **configs: dict[str, int]) -> dict:
    return {
        "schema_version": schema,
        "configs": {name: {"kind": "objective", "rows": rows} for name, rows in configs.items()},
        "files": {},
    }


def test_changelog_counts_the_net_change_per_config_and_split() -> None:
    old = manifest(sft={"train": 10, "test": 2}, dpo={"train": 5}, gone={"train": 1})
    new = manifest("1.1.0", sft={"train": 12, "test": 1}, dpo={"train": 5}, fresh={"train": 3})
    log = changelog(old, new)
    assert log["rows"] == {
        "fresh": {"train": {"before": 0, "after": 3, "net": 3}},
        "gone": {"train": {"before": 1, "after": 0, "net": -1}},
        "sft": {
            "train": {"before": 10, "after": 12, "net": 2},
            "test": {"before": 2, "after": 1, "net": -1},
        },
    }
    assert log["configs_added"] == ["fresh"] and log["configs_removed"] == ["gone"]
    assert log["schema_version"] == {"from": "1.0.0", "to": "1.1.0", "changed": True}
    assert log["rows_total"] == {"before": 18, "after": 21}
    assert changelog(None, new)["first_release"] is True


def test_the_release_notes_call_a_row_count_difference_a_net_change() -> None:
    """The manifests hold row counts, not rows: 10 -> 12 may be 5 rows removed and 7 added,
    so the card says "+2, net", never "2 added, 0 removed"."""
    old, new = manifest(sft={"train": 10, "test": 2}), manifest(sft={"train": 12, "test": 1})
    release = release_info(
        "org/ds", Version.parse("1.1.0"), (Version.parse("1.0.0"), "v1.0.0"), old, new
    )
    notes = changelog_markdown(release)
    assert "| config | split | rows before | rows after | net change |" in notes
    assert "| `sft` | train | 10 | 12 | +2 |" in notes and "| `sft` | test | 2 | 1 | -1 |" in notes
    assert "not a count of rows added and removed" in notes and "added |" not in notes


def test_release_card_and_manifest() -> None:
    old, new = manifest(sft={"train": 1}), manifest(sft={"train": 3})
    release = release_info(
        "org/ds", Version.parse("1.1.0"), (Version.parse("1.0.0"), "v1.0.0"), old, new
    )
    card = (
        "---\nconfigs:\n- config_name: dpo\n- config_name: sft\n  default: true\n---\n\n"
        "# Title\n\nIntro.\n\n## Rows\n\ntable\n"
    )
    assert default_config(card) == "sft"
    text = release_card(card, release, default_config(card)).decode()
    assert text.startswith(card[: card.index("## Rows")])
    assert text.endswith("## Rows\n\ntable\n")
    assert "version **1.1.0**" in text and "(`v1.0.0`)" in text
    assert 'load_dataset("org/ds", "sft", revision="v1.1.0")' in text
    assert "| `sft` | train | 1 | 3 | +2 |" in text
    data = json.loads(release_manifest(new, release))
    assert data["release"]["previous_tag"] == "v1.0.0"
    assert {k: v for k, v in data.items() if k != "release"} == new
    # Deterministic: the same release stages the same bytes.
    assert release_manifest(new, release) == release_manifest(new, release)


# ---------------------------------------------------------------------------- plan


def test_plan_classifies_files_and_deletes_only_release_files() -> None:
    card = LocalFile.from_bytes("README.md", b"new card")
    same = LocalFile("a/train-0.parquet", 3, "s" * 64)
    moved = LocalFile("b/train-0.parquet", 4, "m" * 64)  # bytes the Hub already stores
    fresh = LocalFile("c/train-0.parquet", 5, "f" * 64)
    remote = RemoteState(
        exists=True,
        private=False,
        head="h" * 40,
        files={
            "README.md": RemoteFile("README.md", 8, git_blob_id(b"old card"), None),
            "a/train-0.parquet": RemoteFile("a/train-0.parquet", 3, "x", "s" * 64),
            "old/train-0.parquet": RemoteFile("old/train-0.parquet", 4, "y", "m" * 64),
            "listed.bin": RemoteFile("listed.bin", 1, "z", "l" * 64),
            ".gitattributes": RemoteFile(".gitattributes", 10, "g", None),
            "notes.txt": RemoteFile("notes.txt", 10, "n", None),
        },
        tags={"v1.0.0": "h" * 40},
        stored={"s" * 64, "m" * 64, "l" * 64},
    )
    previous = {"files": {"listed.bin": "l" * 64}}
    plan = make_plan(
        "org/ds", Version.parse("1.1.0"), None, [card, same, moved, fresh], remote, True, previous
    )
    actions = {c.file.path: (c.action, c.present) for c in plan.changes}
    assert actions == {
        "README.md": (UPDATE, False),
        "a/train-0.parquet": (UNCHANGED, True),
        "b/train-0.parquet": (ADD, True),
        "c/train-0.parquet": (ADD, False),
    }
    assert [d.path for d in plan.deletions] == ["listed.bin", "old/train-0.parquet"]
    assert plan.new_bytes == card.size + fresh.size
    assert plan.present_bytes == same.size + moved.size
    assert plan.parent_commit == "h" * 40 and not plan.create_repo
    assert plan.private is False  # an existing repository keeps its visibility
    assert [c.file.path for c in plan.committed] == [
        "README.md",
        "b/train-0.parquet",
        "c/train-0.parquet",
    ]


def test_an_identical_regular_file_is_unchanged() -> None:
    card = LocalFile.from_bytes("README.md", b"card")
    remote = RemoteState(
        exists=True,
        head="h" * 40,
        files={"README.md": RemoteFile("README.md", 4, git_blob_id(b"card"), None)},
    )
    plan = make_plan("org/ds", Version.parse("1.0.0"), None, [card], remote, False)
    assert [c.action for c in plan.changes] == [UNCHANGED]
    assert plan.committed == [] and plan.deletions == []


def test_changelog_names_the_configs_whose_data_files_changed() -> None:
    """Rows replaced one for one change no count: the file digests show the change."""
    old = manifest(sft={"train": 2}, dpo={"train": 1})
    old["files"] = {"sft/train-a.parquet": "1", "dpo/train-b.parquet": "2", "README.md": "3"}
    new = manifest(sft={"train": 2}, dpo={"train": 1})
    new["files"] = {"sft/train-c.parquet": "4", "dpo/train-b.parquet": "2", "README.md": "5"}
    log = changelog(old, new)
    assert (log["rows"], log["configs_changed"]) == ({}, ["sft"])
    release = {"changes": log}
    text = changelog_markdown(release)
    assert "Data files changed in: `sft`." in text and "unchanged in every config" in text
    assert "No data file changed" in changelog_markdown({"changes": changelog(old, old)})
    # only configs count (a card's images folder is none); a removed config is a change;
    # a previous manifest without digests (an older builder) says nothing of files
    new["files"] |= {"images/rows.png": "6"}
    old["files"] |= {"images/rows.png": "7"}
    assert changelog(old, new)["configs_changed"] == ["sft"]
    fewer = manifest(sft={"train": 2})
    fewer["files"] = {"sft/train-a.parquet": "1"}
    text = changelog_markdown({"changes": changelog(old, fewer)})
    assert "Configs removed: `dpo`." in text and "No data file changed" not in text
    old["files"] = {}
    log = changelog(old, new)
    assert log["configs_changed"] is None
    assert "No data file changed" not in changelog_markdown({"changes": log})
