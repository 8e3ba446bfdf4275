"""Config: dataset.toml sections, paths relative to the file, strict keys and types, overrides."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from builder.config import BuildConfig, CardConfig, ConfigError, find_config, load_config

FULL = """
[inputs]
episodes = ["runs/*.jsonl.gz", "extra.jsonl"]
synthetic_questions = "questions/synthetic/*.jsonl"
llm_questions = []
sessions = "sqlite:///db/sessions.sqlite"

[output]
out = "build/ds"
rejects = "build/rejects.jsonl"
parquet_max_rows_per_file = 1000

[checks]
max_reject_ratio = 0.05
strict = true
max_line_bytes = 4096
hook_value_limit = 500

[build]
batch_lines = 64
segment_bytes = 33554432

[splits]
train = 0.8
validation = 0.1
test = 0.1
salt = "v2"

[derive]
dpo_max_pairs_per_episode = 2
null_correct_trains = false

[card]
pretty_name = "Traces"
license = "apache-2.0"
tags = ["code", "agents"]
"""


def write(folder: Path, text: str, name: str = "dataset.toml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_every_section_is_read(tmp_path: Path) -> None:
    base = tmp_path / "project"
    config = load_config(write(base, FULL))
    assert config.episodes == (str(base / "runs/*.jsonl.gz"), str(base / "extra.jsonl"))
    assert config.synthetic_questions == (str(base / "questions/synthetic/*.jsonl"),)
    assert config.llm_questions == ()
    assert config.sessions == f"sqlite:///{base / 'db/sessions.sqlite'}"
    assert config.out == base / "build/ds"
    assert config.rejects == base / "build/rejects.jsonl"
    assert config.parquet_max_rows_per_file == 1000
    assert (config.max_reject_ratio, config.strict) == (0.05, True)
    assert (config.max_line_bytes, config.hook_value_limit, config.batch_lines) == (4096, 500, 64)
    assert config.segment_bytes == 32 << 20
    assert (config.split_train, config.split_validation, config.split_test) == (0.8, 0.1, 0.1)
    assert config.split_salt == "v2"
    assert (config.dpo_max_pairs_per_episode, config.null_correct_trains) == (2, False)
    assert config.card.pretty_name == "Traces" and config.card.tags == ("code", "agents")
    assert config.card.task_categories == CardConfig().task_categories  # untouched default
    assert config.config_path == base / "dataset.toml"


def test_relative_paths_resolve_against_the_files_folder_from_any_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path / "a" / "b", '[inputs]\nepisodes = "e.jsonl"\n[output]\nout = "../ds"\n')
    monkeypatch.chdir(tmp_path)
    config = load_config(Path("a/b/dataset.toml"))
    assert config.episodes == (str(Path("a/b/e.jsonl")),)
    assert config.out == Path("a/b/../ds")
    assert Path(config.episodes[0]).resolve() == (tmp_path / "a/b/e.jsonl").resolve()
    assert path.is_file()


def test_absolute_paths_and_urls_are_kept(tmp_path: Path) -> None:
    text = (
        f'[inputs]\nepisodes = ["{tmp_path}/abs.jsonl"]\n'
        'sessions = "postgresql://user@host/db"\n'
        f'[output]\nout = "{tmp_path}/out"\n'
    )
    config = load_config(write(tmp_path / "cfg", text))
    assert config.episodes == (f"{tmp_path}/abs.jsonl",)
    assert config.sessions == "postgresql://user@host/db"
    assert config.out == tmp_path / "out"
    absolute = load_config(
        write(tmp_path / "cfg2", '[inputs]\nsessions = "sqlite:////data/s.db"\n')
    )
    assert absolute.sessions == "sqlite:////data/s.db"


def test_missing_sections_keep_defaults(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "[checks]\nstrict = true\n"))
    defaults = BuildConfig()
    assert config.strict is True
    assert config.out == defaults.out and config.episodes == ()
    assert config.max_reject_ratio == defaults.max_reject_ratio == 0.01
    assert load_config(None) == BuildConfig()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[input]\nepisodes = []\n", "unknown section [input]"),
        ("episodes = []\n", "unknown section [episodes]"),
        ("[inputs]\nepisode = []\n", "unknown key 'episode' in [inputs]"),
        ("[output]\nstrict = true\n", "unknown key 'strict' in [output]"),
        ("[splits]\nsplit_train = 0.5\n", "unknown key 'split_train' in [splits]"),
        ("[card]\ncolour = 'blue'\n", "unknown key(s) in [card]: colour"),
    ],
)
def test_unknown_sections_and_keys_are_errors(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, text))
    assert message in str(info.value)
    assert "dataset.toml" in str(info.value)


@pytest.mark.parametrize(
    "text",
    [
        '[checks]\nstrict = "yes"\n',
        "[checks]\nstrict = 1\n",
        '[checks]\nmax_reject_ratio = "1%"\n',
        "[checks]\nmax_reject_ratio = true\n",
        "[checks]\nmax_reject_ratio = nan\n",  # compares false with any bound
        "[decontamination]\nthreshold = nan\n",
        "[checks]\nmax_line_bytes = 1.5\n",
        "[build]\nbatch_lines = true\n",
        '[build]\nbatch_lines = "64"\n',
        "[build]\nsegment_bytes = -1\n",
        "[build]\nworkers = -1\n",
        "[build]\nworkers = 2147483647\n",  # past any pool
        "[checks]\nmax_line_bytes = 9223372036854775807\n",  # past what an index holds
        "[derive]\nmax_output_chars = 99999999999999999999\n",
        '[build]\nsegment_bytes = "64MB"\n',
        "[inputs]\nepisodes = 3\n",
        "[inputs]\nepisodes = [1, 2]\n",
        "[output]\nout = 3\n",
        "[output]\nout = ['a', 'b']\n",
        "[splits]\nsalt = 1\n",
        "[derive]\nnull_correct_trains = 0\n",
    ],
)
def test_wrong_types_are_errors(tmp_path: Path, text: str) -> None:
    with pytest.raises(ConfigError, match="must be"):
        load_config(write(tmp_path, text))


def test_integer_where_a_float_is_expected_is_fine(tmp_path: Path) -> None:
    config = load_config(
        write(
            tmp_path,
            "[checks]\nmax_reject_ratio = 0\n[splits]\ntrain = 1\nvalidation = 0\ntest = 0\n",
        )
    )
    assert config.max_reject_ratio == 0
    assert (config.split_train, config.split_validation, config.split_test) == (1, 0, 0)


@pytest.mark.parametrize(
    "text",
    ["[card]\npretty_name = 3\n", "[card]\nlicense = ['mit']\n", "[card]\ntags = 'code'\n"],
)
def test_wrong_types_in_card_are_errors(tmp_path: Path, text: str) -> None:
    # A string where a list belongs would otherwise become a tuple of characters downstream.
    with pytest.raises(ConfigError):
        load_config(write(tmp_path, text))


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('[card]\nlicense = ""\n', "license must not be empty (leave it out for 'other')"),
        ('[card]\npretty_name = "  "\n', "pretty_name must not be empty"),
        ('[card]\ntags = ["code", ""]\n', "tags must not hold an empty string"),
    ],
)
def test_empty_card_metadata_is_refused(tmp_path: Path, text: str, said: str) -> None:
    """The Hub reads an empty license or title as none at all."""
    with pytest.raises(ConfigError, match=re.escape(said)):
        load_config(write(tmp_path, text))


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('[card]\npretty_name = "Agent\\ntraces"\n', "pretty_name must be one line of printable"),
        ('[card]\nlicense = "mit\\u0085"\n', "license must be one line of printable text"),
        ('[card]\ntags = ["code", "a\\tb"]\n', "tags must hold one line of printable text each"),
    ],
)
def test_card_metadata_with_line_breaks_or_control_characters_is_refused(
    tmp_path: Path, text: str, said: str
) -> None:
    """The card's YAML metadata is one line of text each: YAML reads some breaks back as
    other text (U+0085 as a space)."""
    with pytest.raises(ConfigError, match=re.escape(said)):
        load_config(write(tmp_path, text))
    assert load_config(write(tmp_path, '[card]\npretty_name = "Été — traces 🤖"\n')).card


def test_unreadable_config_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(write(tmp_path, "[inputs\nepisodes = "))
    (tmp_path / "bin.toml").write_bytes(b"\xff\xfe[inputs]")
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(tmp_path / "bin.toml")


def test_find_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert find_config(None, tmp_path) is None
    write(tmp_path, "")
    assert find_config(None, tmp_path) == tmp_path / "dataset.toml"
    monkeypatch.chdir(tmp_path)
    assert find_config(None, Path.cwd()) == Path("dataset.toml")  # relative in the cwd
    other = write(tmp_path / "elsewhere", "", name="custom.toml")
    assert find_config(other, tmp_path) == other
    with pytest.raises(ConfigError, match="config file not found"):
        find_config(tmp_path / "nope.toml", tmp_path)


def test_dev_null_is_a_config_with_no_settings(tmp_path: Path) -> None:
    # the usual way to ignore a dataset.toml in the working folder
    write(tmp_path, "[build]\nstrict = true\n")
    found = find_config(Path("/dev/null"), tmp_path)
    assert found == Path("/dev/null")
    assert load_config(found).strict == BuildConfig().strict


def test_with_overrides_applies_given_values_only(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, FULL))
    out = config.with_overrides(
        episodes=("cli.jsonl",),
        out=Path("cli/out"),
        strict=False,
        max_reject_ratio=None,  # flag not given: the file's value stays
        rejects=None,
    )
    assert out.episodes == ("cli.jsonl",)
    assert out.out == Path("cli/out")
    assert out.strict is False  # an explicit False overrides the file's true
    assert out.max_reject_ratio == 0.05
    assert out.rejects == config.rejects
    assert config.strict is True  # the original is unchanged (frozen)
    with pytest.raises(TypeError):
        config.with_overrides(no_such_option=1)


@pytest.mark.parametrize(
    "text",
    ["[checks]\nstrict = true\nstrict = false\n", "[checks]\nstrict = true\n[checks]\n"],
)
def test_a_key_or_table_given_twice_is_named_so(tmp_path: Path, text: str) -> None:
    path = tmp_path / "dataset.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=r"given twice\?"):
        load_config(path)
