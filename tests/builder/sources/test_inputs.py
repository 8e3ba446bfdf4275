"""Sources: glob expansion, transparent decompression, numbered lines, digests, bad files."""

from __future__ import annotations

import gzip
import hashlib
import os
import re
import tracemalloc
from pathlib import Path

import pytest
import zstandard

from builder.sources.inputs import InputError, InputFile, expand_inputs

LINES = [
    b'{"episode_id": "a", "text": "caf\xc3\xa9"}',
    b"",
    b"   ",
    b'{"episode_id": "b"}',
    b"not json at all",
    b'{"episode_id": "c", "text": "last"}',
]
CONTENT = b"\n".join(LINES) + b"\n"


def write(path: Path, data: bytes) -> Path:
    if path.name.endswith(".gz"):
        data = gzip.compress(data)
    elif path.name.endswith(".zst"):
        data = zstandard.ZstdCompressor().compress(data)
    path.write_bytes(data)
    return path


def read(path: Path, max_line_bytes: int = 1 << 20) -> list[tuple[int, bytes, bool]]:
    return [(s.number, s.raw, s.too_long) for s in InputFile(str(path), max_line_bytes).lines()]


# ---------------------------------------------------------------- glob expansion


def test_expand_inputs_sorts_by_path_and_drops_duplicates(tmp_path: Path) -> None:
    for name in ("b.jsonl", "a.jsonl", "c.jsonl.gz", "notes.txt"):
        (tmp_path / name).write_bytes(b"")
    a, b = str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")
    assert expand_inputs([str(tmp_path / "*.jsonl")]) == [a, b]
    # an explicit path already matched by a glob is not read twice
    assert expand_inputs([str(tmp_path / "*.jsonl"), a]) == [a, b]
    assert expand_inputs([b, str(tmp_path / "*.jsonl")]) == [a, b]
    c = str(tmp_path / "c.jsonl.gz")
    assert expand_inputs([str(tmp_path / "*.jsonl*")]) == [a, b, c]
    # sorted across patterns too: the order they are given in changes nothing
    assert expand_inputs([c, str(tmp_path / "*.jsonl")]) == [a, b, c]
    assert expand_inputs([str(tmp_path / "b.*"), str(tmp_path / "a.*")]) == [a, b]
    # one file under two names (a relative spelling, a link) is read once, as first named
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "a.jsonl")
    dotted = str(tmp_path / "." / "a.jsonl")
    assert expand_inputs([dotted, a, str(tmp_path / "link.jsonl")]) == [dotted]


def test_a_file_whose_name_looks_like_a_glob_is_taken_as_named(tmp_path: Path) -> None:
    """Inputs are patterns, but a caller may list files it found itself (or a glob's own
    expansion): a file named ``day[1].jsonl`` is itself, not the pattern matching
    ``day1.jsonl``."""
    odd, plain = tmp_path / "day[1].jsonl", tmp_path / "day1.jsonl"
    odd.write_bytes(b"")
    plain.write_bytes(b"")
    found = expand_inputs([str(tmp_path / "*.jsonl")])
    assert found == sorted([str(odd), str(plain)])
    assert expand_inputs(found) == found
    assert expand_inputs([str(odd)]) == [str(odd)]


def test_expand_inputs_recursive_glob(tmp_path: Path) -> None:
    (tmp_path / "x" / "y").mkdir(parents=True)
    deep = tmp_path / "x" / "y" / "deep.jsonl"
    deep.write_bytes(b"")
    (tmp_path / "top.jsonl").write_bytes(b"")
    found = expand_inputs([str(tmp_path / "**" / "*.jsonl")])
    assert found == sorted([str(deep), str(tmp_path / "top.jsonl")])


def test_expand_inputs_pattern_matching_nothing_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes(b"")
    pattern = str(tmp_path / "*.jsonl.gz")
    with pytest.raises(InputError, match="no input file matches") as info:
        expand_inputs([str(tmp_path / "a.jsonl"), pattern])
    assert pattern in str(info.value)
    with pytest.raises(InputError):
        expand_inputs([str(tmp_path / "missing.jsonl")])
    with pytest.raises(InputError):  # a folder is not an input file
        expand_inputs([str(tmp_path)])


# ---------------------------------------------------------------- reading


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz", ".jsonl.zst"])
def test_every_format_yields_the_same_numbered_lines(tmp_path: Path, suffix: str) -> None:
    path = write(tmp_path / f"episodes{suffix}", CONTENT)
    assert read(path) == [(i + 1, raw, False) for i, raw in enumerate(LINES)]


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz", ".jsonl.zst"])
def test_stats_hash_the_stored_bytes_and_count_lines(tmp_path: Path, suffix: str) -> None:
    path = write(tmp_path / f"episodes{suffix}", CONTENT)
    stored = path.read_bytes()
    source = InputFile(str(path), 1 << 20)
    progress: list[int] = []
    assert len(list(source.lines(progress.append))) == len(LINES)
    assert source.stats.path == str(path)
    assert source.stats.sha256 == hashlib.sha256(stored).hexdigest()
    assert source.stats.bytes == len(stored)
    assert source.stats.lines == len(LINES)
    assert sum(progress) == len(stored)
    if suffix != ".jsonl":
        assert source.stats.sha256 != hashlib.sha256(CONTENT).hexdigest()


def test_last_line_without_terminator_and_empty_file(tmp_path: Path) -> None:
    path = write(tmp_path / "a.jsonl", b"{}\n[1]")
    assert read(path) == [(1, b"{}", False), (2, b"[1]", False)]
    empty = InputFile(str(write(tmp_path / "empty.jsonl", b"")), 100)
    assert list(empty.lines()) == []
    assert empty.stats.lines == 0
    assert empty.stats.sha256 == hashlib.sha256(b"").hexdigest()


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz", ".jsonl.zst"])
def test_crlf_and_leading_bom_are_stripped(tmp_path: Path, suffix: str) -> None:
    data = b'\xef\xbb\xbf{"a": 1}\r\n{"b": 2}\r\n\r\n{"c": 3}'
    path = write(tmp_path / f"windows{suffix}", data)
    assert read(path) == [
        (1, b'{"a": 1}', False),
        (2, b'{"b": 2}', False),
        (3, b"", False),
        (4, b'{"c": 3}', False),
    ]


def test_a_bom_that_starts_a_later_line_is_stripped_too(tmp_path: Path) -> None:
    """``cat a.jsonl b.jsonl`` of two files saved with a BOM: one starts the second file's
    first line. It is a marker there too (JSON cannot start with one), not a bad record."""
    path = write(tmp_path / "a.jsonl", b'{"a": 1}\n\xef\xbb\xbf{"b": 2}\n')
    assert read(path)[1] == (2, b'{"b": 2}', False)


@pytest.mark.parametrize(
    ("head", "says"),
    [
        (gzip.compress(CONTENT), "is gzip-compressed: name it {path}.gz"),
        (zstandard.ZstdCompressor().compress(CONTENT), "is zstd-compressed: name it {path}.zst"),
        (CONTENT.decode().encode("utf-16"), "is UTF-16 text"),
        (CONTENT.decode().encode("utf-16-be"), "is UTF-16 text"),  # no byte-order mark
        ("{".encode("utf-16"), "is UTF-16 text"),  # the mark and one character
        (
            b"\x50\x2a\x4d\x18\x00\x00\x00\x00" + zstandard.ZstdCompressor().compress(CONTENT),
            "is zstd-compressed",
        ),  # a skippable frame first
    ],
    ids=["gzip", "zstd", "utf-16", "utf-16-be", "utf-16-short", "zstd-skippable"],
)
def test_a_file_that_is_not_plain_text_under_a_plain_name_is_refused(
    tmp_path: Path, head: bytes, says: str
) -> None:
    path = write(tmp_path / "episodes.jsonl", head)
    with pytest.raises(InputError, match=re.escape(says.format(path=path))) as raised:
        read(path)
    assert raised.value.hint == ""  # the message says what to do


def test_a_first_line_of_garbage_that_starts_like_a_byte_order_mark_is_a_bad_line(
    tmp_path: Path,
) -> None:
    path = write(tmp_path / "torn.jsonl", b"\xff\xfe\x41\x42 torn\n" + CONTENT)
    assert read(path)[0] == (1, b"\xff\xfeAB torn", False)


def test_a_pipe_or_a_broken_link_is_named_for_what_it_is(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.jsonl")
    with pytest.raises(InputError, match="is not a regular file \\(a pipe\\?\\)"):
        expand_inputs([str(tmp_path / "pipe.jsonl")])
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "gone.jsonl")
    with pytest.raises(InputError, match="is a broken symbolic link"):
        expand_inputs([str(tmp_path / "link.jsonl")])
    (tmp_path / "a.jsonl").symlink_to(tmp_path / "b.jsonl")
    (tmp_path / "b.jsonl").symlink_to(tmp_path / "a.jsonl")
    with pytest.raises(InputError, match=r"a\.jsonl is a loop of symbolic links"):
        expand_inputs([str(tmp_path / "a.jsonl")])


def test_a_file_in_a_folder_it_may_not_read_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not "no input file matches": the folder on its path refuses (root reads any
    folder: the refusal is the system's, stood in for here)."""
    name = str(tmp_path / "locked" / "x.jsonl")

    def refused(self: Path) -> os.stat_result:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "lstat", refused)
    with pytest.raises(InputError, match=re.escape(f"{name}: Permission denied (a folder")):
        expand_inputs([name])


def test_line_at_the_limit_is_kept_one_byte_over_is_too_long(tmp_path: Path) -> None:
    limit = 64
    at, over = b"a" * limit, b"b" * (limit + 1)
    path = write(tmp_path / "a.jsonl", at + b"\n" + over + b"\n" + b"{}\n" + over)
    assert read(path, limit) == [
        (1, at, False),
        (2, over, True),  # prefix (<= 256 bytes) of a too-long line
        (3, b"{}", False),
        (4, over, True),
    ]


def test_the_limit_is_the_record_s_whatever_its_terminator_or_bom(tmp_path: Path) -> None:
    """CRLF and a leading BOM are not the record's bytes: a record at the limit is kept with
    either, one byte over is too long with either, and its prefix has no BOM."""
    limit = 64
    at, over = b"a" * limit, b"b" * (limit + 1)
    bom = b"\xef\xbb\xbf"
    path = write(tmp_path / "a.jsonl", bom + at + b"\r\n" + at + b"\r\n" + over + b"\r\n" + at)
    assert read(path, limit) == [(1, at, False), (2, at, False), (3, over, True), (4, at, False)]
    path = write(tmp_path / "b.jsonl", bom + over + b"\r\n" + at + b"\r")
    assert read(path, limit) == [(1, over, True), (2, at, False)]


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz", ".jsonl.zst"])
def test_overlong_line_is_reported_with_bounded_memory(tmp_path: Path, suffix: str) -> None:
    huge = b'{"x": "' + b"y" * (24 << 20) + b'"}'
    path = write(tmp_path / f"hostile{suffix}", b'{"before": 1}\n' + huge + b'\n{"after": 2}\n')
    tracemalloc.start()
    try:
        lines = read(path, max_line_bytes=4096)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [(n, too_long) for n, _, too_long in lines] == [(1, False), (2, True), (3, False)]
    assert lines[0][1] == b'{"before": 1}' and lines[2][1] == b'{"after": 2}'
    assert lines[1][1].startswith(b'{"x": "yyy') and len(lines[1][1]) <= 256
    assert peak < 8 << 20, f"peak {peak >> 20} MiB for a 24 MiB line"


# ---------------------------------------------------------------- broken files


def test_truncated_gzip_is_an_input_error_naming_the_file(tmp_path: Path) -> None:
    blob = gzip.compress(CONTENT * 50)
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(blob[: len(blob) // 2])
    with pytest.raises(InputError, match="truncated") as info:
        read(path)
    assert str(path) in str(info.value)


def test_corrupt_gzip_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl.gz"
    path.write_bytes(b"this is not gzip data")
    with pytest.raises(InputError) as info:
        read(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("cut", [0.5, -3])
def test_truncated_zstd_is_an_input_error_not_a_shorter_file(tmp_path: Path, cut: float) -> None:
    blob = zstandard.ZstdCompressor().compress(CONTENT * 2000)
    end = int(len(blob) * cut) if cut > 0 else len(blob) + int(cut)
    path = tmp_path / "cut.jsonl.zst"
    path.write_bytes(blob[:end])
    with pytest.raises(InputError, match="truncated") as info:
        read(path)
    assert str(path) in str(info.value)


def test_corrupt_zstd_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl.zst"
    path.write_bytes(b"this is not zstd data at all")
    with pytest.raises(InputError) as info:
        read(path)
    assert str(path) in str(info.value)


def test_multi_frame_zstd_and_multi_member_gzip_are_read_to_the_end(tmp_path: Path) -> None:
    second = b'{"episode_id": "z"}\n'
    z = zstandard.ZstdCompressor()
    (tmp_path / "m.jsonl.zst").write_bytes(z.compress(CONTENT) + z.compress(second))
    (tmp_path / "m.jsonl.gz").write_bytes(gzip.compress(CONTENT) + gzip.compress(second))
    for name in ("m.jsonl.zst", "m.jsonl.gz"):
        lines = read(tmp_path / name)
        assert len(lines) == len(LINES) + 1, name
        assert lines[-1] == (len(LINES) + 1, second.rstrip(), False)


def test_unknown_extension_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "episodes.csv"
    path.write_bytes(CONTENT)
    with pytest.raises(InputError, match="unknown input format"):
        read(path)


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot open"):
        read(tmp_path / "gone.jsonl")


def test_random_binary_plain_file_is_read_as_lines_not_an_error(tmp_path: Path) -> None:
    # Bytes that are not UTF-8 are the validate stage's business, line by line.
    # (not starting with a compressed file's or UTF-16's first bytes: those are refused)
    data = b"x" + os.urandom(4096).replace(b"\n", b"") + b"\n{}\n"
    path = write(tmp_path / "noise.jsonl", data)
    lines = read(path)
    assert [n for n, _, _ in lines] == [1, 2]
    assert lines[1] == (2, b"{}", False)


def test_zstd_cut_anywhere_but_a_frame_boundary_is_an_error(tmp_path: Path) -> None:
    """Frames with and without checksum and content size, streamed (several blocks) or one-shot,
    and a skippable frame: a file cut exactly between frames is whole, any other cut is not."""
    plain = zstandard.ZstdCompressor(write_checksum=False, write_content_size=True)
    checked = zstandard.ZstdCompressor(level=19, write_checksum=True)
    streamed = zstandard.ZstdCompressor(write_content_size=False).compressobj()
    body = b"".join(b'{"i": %d, "pad": "%s"}\n' % (i, b"x" * (i % 97)) for i in range(6000))
    skippable = (0x184D2A53).to_bytes(4, "little") + (5).to_bytes(4, "little") + b"meta!"
    frames = [
        plain.compress(b'{"first": 1}\n'),
        skippable,
        streamed.compress(body) + streamed.flush(),
        checked.compress(b'{"last": 2}\n'),
    ]
    blob = b"".join(frames)
    boundaries = {sum(len(f) for f in frames[:i]) for i in range(len(frames) + 1)}
    inside = [1, 5, len(frames[0]) + 3, len(frames[0]) + 12, len(blob) // 2, len(blob) - 1]
    inside += [b - 2 for b in boundaries if b > 2]
    path = tmp_path / "cut.jsonl.zst"
    for cut in sorted(boundaries):
        path.write_bytes(blob[:cut])
        read(path)  # whole frames: no error
    for cut in sorted(set(inside) - boundaries):
        path.write_bytes(blob[:cut])
        with pytest.raises(InputError):
            read(path)
    path.write_bytes(blob)
    lines = read(path)
    assert len(lines) == 2 + 6000
    assert lines[0][1] == b'{"first": 1}' and lines[-1][1] == b'{"last": 2}'


def test_digest_covers_bytes_left_after_the_decompressor_stopped() -> None:
    import io

    from builder.sources.inputs import _DigestingReader

    digest = _DigestingReader(io.BytesIO(b"abc" * 1000))
    assert digest.read(10) == b"abcabcabca"
    digest.drain()
    assert digest.bytes == 3000
    assert digest.sha256.hexdigest() == hashlib.sha256(b"abc" * 1000).hexdigest()
