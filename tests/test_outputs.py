"""Outputs: one atomic writer (gpuadvisor.output), never through a symbolic link, never over an input, two
outputs never on one file; all checked before any work, each a one-line error with exit 2."""

from __future__ import annotations

import errno
import os
import shutil
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from gpuadvisor.errors import OutputError
from gpuadvisor.output import plan_outputs, write_atomic

FIXTURES = Path(__file__).parent / "fixtures"
SMI = FIXTURES / "import" / "samples" / "smi-q_l4_thamada.txt"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gpuadvisor", *map(str, args)], capture_output=True, text=True, timeout=120, cwd=cwd
    )


def one_line_exit_2(r: subprocess.CompletedProcess, needle: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpuadvisor: error: "), r.stderr
    assert needle in lines[0], lines[0]
    assert "Traceback" not in r.stderr


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("outputs")
    scan = d / "s.json"
    assert run("scan", "--simulate", "4x4090-pcie", "--json", scan).returncode == 0
    rig = d / "rig.toml"
    shutil.copy(Path(__file__).parents[1] / "probes" / "presets" / "h100-pcie.toml", rig)
    pol = d / "p.toml"
    pol.write_text('ignore = ["GA203"]\n')
    smi = d / "smi.txt"
    shutil.copy(SMI, smi)
    return {"dir": d, "scan": scan, "rig": rig, "policy": pol, "smi": smi}


def _snapshot(paths):
    return {p: p.read_bytes() for p in paths}


# -- symbolic links at the output path: refused, the link and its target untouched -------------------------

WRITERS = [
    ("scan", "--simulate", "4x4090-pcie", "--json", "{out}"),
    ("scan", "--simulate", "4x4090-pcie", "--html", "{out}"),
    ("check", "--simulate", "4x4090-pcie", "-o", "{out}"),
    ("check", "--simulate", "4x4090-pcie", "--format", "prom", "-o", "{out}"),
    ("check", "--simulate", "4x4090-pcie", "--json", "{out}"),
    ("import", str(SMI), "--json", "{out}"),
    ("report", "--simulate", "4x4090-pcie", "--html", "{out}"),
    ("advise", "--simulate", "4x4090-pcie", "--model", "gpt2", "--json", "{out}"),
    ("advise", "--simulate", "4x4090-pcie", "--model", "gpt2", "-o", "{out}"),
    ("bench", "--json", "{out}"),
    ("plan", "--model", "gpt2", "--json", "{out}"),
    ("plan", "--model", "gpt2", "--html", "{out}"),
]


@pytest.mark.parametrize("args", WRITERS, ids=lambda a: " ".join(a[:1] + a[-2:-1]))
def test_a_symlink_at_the_output_path_is_refused_and_its_target_kept(tmp_path, args):
    target = tmp_path / "precious"
    target.write_text("do not touch\n")
    os.chmod(target, 0o600)
    link = tmp_path / "out"
    link.symlink_to(target)
    r = run(*(a.replace("{out}", str(link)) for a in args))
    one_line_exit_2(r, "is a symbolic link")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "do not touch\n" and stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(os.listdir(tmp_path)) == ["out", "precious"]  # no temp file left


def test_a_dangling_symlink_is_refused_too(tmp_path):
    link = tmp_path / "out.json"
    link.symlink_to(tmp_path / "created-elsewhere.json")
    one_line_exit_2(run("scan", "--simulate", "h100-pcie", "--json", link), "is a symbolic link")
    assert not (tmp_path / "created-elsewhere.json").exists()


# -- an output that is an input, or two outputs on one file: refused before any work -----------------------


def _cases(w: dict[str, Path]):
    d = w["dir"]
    hard = d / "hard.json"
    if not hard.exists():
        os.link(w["scan"], hard)
    soft = d / "soft.json"
    if not soft.exists():
        soft.symlink_to(w["scan"])
    return [
        (("report", w["scan"], "--html", w["scan"]), "it is the input"),
        (("report", soft, "--html", w["scan"]), "it is the input"),
        (("import", w["smi"], "--json", w["smi"]), "it is the input"),
        (("import", d, "--json", w["smi"]), "it is the input"),  # a file of an input directory
        (("check", "--simulate", "4x4090-pcie", "--policy", w["policy"], "-o", w["policy"]), "--policy"),
        (("check", "--from", w["scan"], "--json", w["scan"]), "--from"),
        (("check", "--simulate", "4x4090-pcie", "-o", d / "x.out", "--json", d / "x.out"), "names the same file"),
        (("scan", "--simulate", w["rig"], "--json", w["rig"]), "--simulate"),
        (("scan", "--from", w["scan"], "--json", w["scan"]), "--from"),
        (("scan", "--from", w["scan"], "--json", hard), "--from"),  # a hard link: same inode
        (("scan", "--simulate", "h100-pcie", "--policy", w["policy"], "--html", w["policy"]), "--policy"),
        (("scan", "--simulate", "h100-pcie", "--json", d / "same", "--html", d / "same"), "names the same file"),
        (("scan", "--simulate", "h100-pcie", "--json", d / "same", "--html", d / "." / "same"), "names the same file"),
        (("advise", "--from", w["scan"], "--model", "gpt2", "--json", w["scan"]), "--from"),
        (("advise", "--from", w["scan"], "--model", "gpt2", "-o", hard), "--from"),
        (("bench", "--from", w["scan"], "--json", w["scan"]), "--from"),
        (("plan", "--calibrate-from", w["scan"], "--model", "gpt2", "--json", hard), "--calibrate-from"),
        (("plan", "--model", "gpt2", "--json", d / "same", "--html", d / "same"), "names the same file"),
    ]


def test_outputs_over_inputs_or_each_other_are_refused_and_inputs_kept(work):
    inputs = [work["scan"], work["rig"], work["policy"], work["smi"]]
    for args, needle in _cases(work):
        before = _snapshot(inputs)
        r = run(*args)
        one_line_exit_2(r, needle)
        assert _snapshot(inputs) == before, args
        assert not (work["dir"] / "same").exists() and not (work["dir"] / "x.out").exists()
    assert not [n for n in os.listdir(work["dir"]) if n.endswith(".tmp")]


def test_refusal_comes_before_any_work(tmp_path, work):
    # A slow source would be probed first if the check came late: --from-nvidia-smi on the input dir itself.
    r = run("scan", "--from-nvidia-smi", work["dir"], "--json", work["smi"])
    one_line_exit_2(r, "it is the input of --from-nvidia-smi")
    # an output in a missing directory: said at once, not after the scan
    one_line_exit_2(run("scan", "--simulate", "h100-pcie", "--json", tmp_path / "no" / "s.json"), "the directory")
    one_line_exit_2(run("scan", "--simulate", "h100-pcie", "--html", tmp_path), "is a directory")


def test_plan_outputs_api(tmp_path):
    a = tmp_path / "a"
    a.write_text("x")
    plan_outputs({"--json": tmp_path / "new.json", "--html": "-", "-o": None}, {"--from": a})
    with pytest.raises(OutputError, match="names the same file"):
        plan_outputs({"--json": tmp_path / "n", "--html": tmp_path / "n"})
    with pytest.raises(OutputError, match="the input of --from"):
        plan_outputs({"--json": a}, {"--from": [str(a)]})


# -- the writer --------------------------------------------------------------------------------------------


def test_write_atomic_keeps_the_mode_of_a_replaced_file_and_gives_new_files_the_umask(tmp_path):
    old = tmp_path / "kept.json"
    old.write_text("old")
    os.chmod(old, 0o640)
    write_atomic(old, "new")
    assert old.read_text() == "new" and stat.S_IMODE(old.stat().st_mode) == 0o640
    mask = os.umask(0o027)
    try:
        write_atomic(tmp_path / "fresh.json", b"\x00bytes")
    finally:
        os.umask(mask)
    assert stat.S_IMODE((tmp_path / "fresh.json").stat().st_mode) == 0o640  # 0666 less umask 027
    assert (tmp_path / "fresh.json").read_bytes() == b"\x00bytes"
    assert sorted(os.listdir(tmp_path)) == ["fresh.json", "kept.json"]


@pytest.mark.parametrize("where", ["write", "fsync", "rename"])
def test_a_failed_write_keeps_the_previous_file_and_removes_the_temp(tmp_path, monkeypatch, where):
    target = tmp_path / "scan.json"
    target.write_text("previous scan\n")

    def full(*a, **k):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, where, full)
    with pytest.raises(OutputError) as e:
        write_atomic(target, "x" * 100_000, what="scan")
    monkeypatch.undo()
    assert str(e.value) == f"{target}: cannot write the scan (No space left on device); the previous file is unchanged"
    assert target.read_text() == "previous scan\n"
    assert os.listdir(tmp_path) == ["scan.json"]


def test_write_atomic_refuses_a_link_planted_after_the_check(tmp_path):
    target = tmp_path / "secret"
    target.write_text("secret")
    (tmp_path / "out").symlink_to(target)
    with pytest.raises(OutputError, match="symbolic link"):
        write_atomic(tmp_path / "out", "pwned")
    assert target.read_text() == "secret"


def test_write_atomic_writes_a_fifo_or_device_in_place(tmp_path):
    write_atomic("/dev/null", "discarded")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    t = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    t.start()
    write_atomic(fifo, "through the pipe")
    t.join(10)
    assert got == [b"through the pipe"] and stat.S_ISFIFO(fifo.lstat().st_mode)


def test_readers_never_see_a_partial_file(tmp_path):
    """A reader in a loop while the file is rewritten: always one whole version, never empty or cut."""
    target = tmp_path / "scan.json"
    versions = [("a" * 300_000 + "\n").encode(), ("b" * 200_000 + "\n").encode()]
    target.write_bytes(versions[0])
    stop = threading.Event()
    seen: set[int] = set()
    bad: list[int] = []

    def reader():
        while not stop.is_set():
            data = target.read_bytes()
            if data not in versions:
                bad.append(len(data))
            seen.add(len(data))

    t = threading.Thread(target=reader)
    t.start()
    try:
        for i in range(60):
            write_atomic(target, versions[i % 2])
    finally:
        stop.set()
        t.join(10)
    assert bad == []


def test_check_output_replaces_a_file_keeping_its_mode(tmp_path):
    out = tmp_path / "node.prom"
    out.write_text("old\n")
    os.chmod(out, 0o600)
    r = run("check", "--simulate", "h100-pcie", "--format", "prom", "-q", "-o", out)
    assert r.returncode in (0, 1), r.stderr
    assert "gpuadvisor_check_status" in out.read_text() and stat.S_IMODE(out.stat().st_mode) == 0o600
