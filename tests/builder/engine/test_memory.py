"""The free memory the build may count on: the machine's, or its container's where that is
less (``builder.engine.memory``)."""

from __future__ import annotations

from pathlib import Path

from builder.engine.memory import available_bytes

GIB = 2**30


def _proc(tmp_path: Path, available_kib: int | None, cgroup: str) -> Path:
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    lines = ["MemTotal:       24000000 kB"]
    if available_kib is not None:
        lines.append(f"MemAvailable:   {available_kib} kB")
    (proc / "meminfo").write_text("\n".join(lines) + "\n")
    (proc / "self" / "cgroup").write_text(cgroup)
    return proc


def _files(folder: Path, **files: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name.replace("_", ".", 1)).write_text(text + "\n")


def test_the_machines_free_memory_without_a_limit(tmp_path: Path) -> None:
    proc = _proc(tmp_path, 8 * 2**20, "0::/\n")
    cgroups = tmp_path / "cgroup"
    _files(cgroups, memory_max="max", memory_current=str(GIB))
    assert available_bytes(proc, cgroups) == 8 * GIB


def test_a_cgroup_v2_limit_below_it(tmp_path: Path) -> None:
    proc = _proc(tmp_path, 8 * 2**20, "0::/build.slice/job\n")
    cgroups = tmp_path / "cgroup"
    _files(cgroups / "build.slice" / "job", memory_max=str(2 * GIB), memory_current=str(GIB // 2))
    assert available_bytes(proc, cgroups) == GIB + GIB // 2


def test_a_cgroup_v1_limit_seen_at_the_mounts_root(tmp_path: Path) -> None:
    # a container sees its own group at the mount's root, not under the path it is named by
    proc = _proc(tmp_path, 8 * 2**20, "4:memory:/docker/abc\n0::/\n")
    cgroups = tmp_path / "cgroup"
    v1 = {"memory_limit_in_bytes": str(3 * GIB), "memory_usage_in_bytes": str(GIB)}
    _files(cgroups / "memory", **v1)
    assert available_bytes(proc, cgroups) == 2 * GIB


def test_v1s_unlimited_and_unreadable_limits_are_no_bound(tmp_path: Path) -> None:
    proc = _proc(tmp_path, 4 * 2**20, "4:cpu,memory:/x\n")
    cgroups = tmp_path / "cgroup"
    v1 = {"memory_limit_in_bytes": "9223372036854771712", "memory_usage_in_bytes": "5"}
    _files(cgroups / "memory" / "x", **v1)
    assert available_bytes(proc, cgroups) == 4 * GIB
    (cgroups / "memory" / "x" / "memory.limit_in_bytes").write_text("garbage\n")
    assert available_bytes(proc, cgroups) == 4 * GIB


def test_a_limit_already_used_up_leaves_nothing(tmp_path: Path) -> None:
    proc = _proc(tmp_path, None, "0::/\n")  # no MemAvailable: sysconf, then the limit
    cgroups = tmp_path / "cgroup"
    _files(cgroups, memory_max=str(GIB), memory_current=str(2 * GIB))
    assert available_bytes(proc, cgroups) == 0


def test_this_machine_answers() -> None:
    free = available_bytes()
    assert free is not None and 0 < free < 2**50
