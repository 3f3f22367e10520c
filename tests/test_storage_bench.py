"""bench --storage: bounded, cleans up (also after SIGTERM/SIGINT), refuses bad directories, agrees with fio."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpuadvisor.bench import storage
from gpuadvisor.bench.storage import (
    MiB,
    StorageBenchError,
    check_dir,
    leftovers,
    run_storage_bench,
)
from tests.browser import under_ci


def run(*args: str, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gpuadvisor", *args], capture_output=True, text=True, timeout=timeout)


def test_python_engine_measures_and_cleans_up(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("x")
    b = run_storage_bench(str(tmp_path), file_bytes=16 * MiB, seconds=0.3, engine="python")
    assert b.method.startswith("gpuadvisor (python ")
    if sys.platform == "linux":  # sequential I/O at queue depth, as fio's libaio engine
        assert b.method.startswith(f"gpuadvisor (python native AIO, {storage.SEQ_DEPTH} sequential I/Os in flight")
    assert b.file_bytes is not None and 0 < b.file_bytes <= 16 * MiB and b.file_bytes % MiB == 0
    assert b.seq_write_gbps and b.seq_read_gbps and b.rand_read_iops and b.rand_read_latency_us
    # IOPS x latency at queue depth 1 is the elapsed time: one second of I/O per second
    assert b.rand_read_iops * b.rand_read_latency_us / 1e6 == pytest.approx(1.0, rel=0.01)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]


def test_cli_prints_and_saves(tmp_path: Path) -> None:
    out = tmp_path / "scan.json"
    p = run(
        "bench",
        "--storage",
        str(tmp_path),
        "--storage-size",
        "8M",
        "--storage-seconds",
        "0.2",
        "--storage-engine",
        "python",
        "--json",
        str(out),
    )
    assert p.returncode == 0, p.stderr
    assert "sequential write" in p.stdout and "4 KiB random read" in p.stdout
    from gpuadvisor.facts import load

    rig = load(out)
    (sp,) = [s for s in rig.storage.paths if s.path == str(tmp_path.resolve())]
    assert sp.bench is not None and sp.bench.provenance == "measured" and sp.bench.seq_read_gbps
    assert rig.provenance["storage"] == "measured"
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize(
    "make,why",
    [
        (lambda d: d / "missing", "no such directory"),
        (lambda d: (d / "f").write_text("x") and d / "f", "not a directory"),
    ],
)
def test_bad_paths_one_line_exit_2(tmp_path: Path, make, why: str) -> None:
    p = run("bench", "--storage", str(make(tmp_path)))
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and why in p.stderr and p.stdout == ""


def test_read_only_and_no_space_refused_before_writing(tmp_path: Path) -> None:
    ro = SimpleNamespace(f_flag=os.ST_RDONLY, f_bavail=10**9, f_frsize=4096)
    with pytest.raises(StorageBenchError, match="read-only"):
        check_dir(str(tmp_path), 16 * MiB, statvfs=lambda p: ro)
    small = SimpleNamespace(f_flag=0, f_bavail=(90 * MiB) // 4096, f_frsize=4096)
    with pytest.raises(StorageBenchError, match="90 MiB free, the benchmark needs 96 MiB"):
        run_storage_bench(str(tmp_path), file_bytes=16 * MiB, engine="python", statvfs=lambda p: small)
    assert list(tmp_path.iterdir()) == []
    p = run("bench", "--storage", str(tmp_path), "--storage-size", "1T")  # more than this disk has free
    assert p.returncode == 2 and "free" in p.stderr and list(tmp_path.iterdir()) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to a mode-555 directory")
def test_unwritable_directory(tmp_path: Path) -> None:
    d = tmp_path / "ro"
    d.mkdir(mode=0o555)
    p = run("bench", "--storage", str(d))
    assert p.returncode == 2 and "read-only" in p.stderr


@pytest.mark.parametrize("sig,rc", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
@pytest.mark.parametrize("engine", ["python", "fio"])
def test_signal_leaves_nothing_behind(tmp_path: Path, sig: signal.Signals, rc: int, engine: str) -> None:
    if engine == "fio" and not shutil.which("fio"):
        pytest.skip("fio not installed")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gpuadvisor",
            "bench",
            "--storage",
            str(tmp_path),
            "--storage-size",
            "64M",
            "--storage-seconds",
            "30",
            "--storage-engine",
            engine,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while not leftovers(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert leftovers(tmp_path), "the benchmark never created its file"
    time.sleep(0.5)  # inside the timed loops (or fio's jobs)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == rc, err
    assert leftovers(tmp_path) == [] and list(tmp_path.iterdir()) == []
    if engine == "fio":
        ps = subprocess.run(["pgrep", "-f", f"fio .*{tmp_path}"], capture_output=True, text=True)
        assert ps.stdout.strip() == "", "fio still running after the signal"


def test_built_in_figures_are_decimal_gb_of_a_fixed_size_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The unit, checked without timing anything: a 4 MiB file and a clock that reads 1 ms for each sequential
    phase. 4 MiB in 1 ms is 4.194 GB/s (1e9 bytes); a GiB slip would read 3.906."""
    ticks = iter([10.0, 10.001, 20.0, 20.001, 30.0, 32.0])
    monkeypatch.setattr(storage, "_clock", lambda: next(ticks))
    random_phase = storage._random_phase  # the sequential phases get 30 s to finish the file, random reads 0.05 s
    monkeypatch.setattr(storage, "_random_phase", lambda fd, view, size, s: random_phase(fd, view, size, 0.05))
    b = run_storage_bench(str(tmp_path), file_bytes=4 * MiB, seconds=30, engine="python")
    assert b.file_bytes == 4 * MiB
    assert b.seq_write_gbps == 4.194 and b.seq_read_gbps == 4.194
    assert b.rand_read_iops is not None and b.rand_read_latency_us is not None
    ops = b.rand_read_iops * 2.0  # reads done in the 2 s the clock says the random phase took
    assert ops == int(ops) and ops % 64 == 0 and b.rand_read_latency_us == round(2.0 / ops * 1e6, 2)
    assert leftovers(tmp_path) == []


def test_sequential_phase_writes_every_block_in_place_and_reads_it_back(tmp_path: Path) -> None:
    """The queue-depth engine (native AIO where the kernel has it) writes each 1 MiB block at its own offset,
    stamped with that offset (random payload after it), and the read phase reads the whole file."""
    path = tmp_path / "f"
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        os.ftruncate(fd, 6 * MiB)
        written, _, depth = storage._seq_phase(fd, 6 * MiB, 60, write=True)
        assert written == 6 * MiB
        if sys.platform == "linux":
            assert depth == storage.SEQ_DEPTH > 1
        assert [int.from_bytes(os.pread(fd, 8, i * MiB), "little") for i in range(6)] == [i * MiB for i in range(6)]
        assert all(os.pread(fd, 64, i * MiB + MiB - 64) != bytes(64) for i in range(6))  # written to the end
        done, _, _ = storage._seq_phase(fd, 6 * MiB, 60, write=False)
        assert done == 6 * MiB
    finally:
        os.close(fd)


def test_fio_figures_are_decimal_gb_of_a_fixed_size_file(tmp_path: Path) -> None:
    """fio's own JSON for the jobs bench --storage gives it, on a 16 MiB file: every sequential job moves exactly
    the file, and the figure read from it is those bytes over fio's runtime in 1e9 bytes/s (a GiB slip is 7.4 %
    off, far outside the millisecond rounding of fio's runtime checked here)."""
    import json

    from gpuadvisor.bench.storage import fio_args
    from gpuadvisor.importers.fio import from_json

    fio = shutil.which("fio")
    if not fio:
        if under_ci():
            pytest.fail("fio not installed: under CI the fio unit check must run (make test installs fio)")
        pytest.skip("fio not installed (apt-get install fio)")
    target = tmp_path / "f"
    target.touch()
    # a runtime cap of 5 s: the sequential jobs end at the file's 16 MiB (on any device over 3.4 MB/s), the
    # time-based random-read job runs the 5 s
    for direct in (True, False):  # then without O_DIRECT: a filesystem without it (tmpfs)
        args = fio_args(fio, str(target), 16 * MiB, 5, direct)
        out = subprocess.run(args, capture_output=True, text=True, timeout=120)
        if out.returncode == 0:
            break
    data = json.loads(out.stdout[out.stdout.index("{") :])
    bench = from_json(data, "fio")
    jobs = {j["jobname"]: j for j in data["jobs"]}
    for job, side, field in (("seqwrite", "write", "seq_write_gbps"), ("seqread", "read", "seq_read_gbps")):
        st = jobs[job][side]
        assert st["io_bytes"] == 16 * MiB
        assert st["bw_bytes"] == pytest.approx(st["io_bytes"] / (st["runtime"] / 1e3), rel=0.05)
        assert getattr(bench, field) == pytest.approx(st["bw_bytes"] / 1e9, abs=0.0005)
        assert getattr(bench, field) != pytest.approx(st["bw_bytes"] / 2**30, rel=0.03)
    assert bench.rand_read_iops == pytest.approx(jobs["randread"]["read"]["iops"])


@pytest.mark.skipif(sys.platform != "linux", reason="native AIO is Linux's")
def test_aio_queued_ios_go_in_one_submit_and_each_lands_at_its_offset(tmp_path: Path) -> None:
    """Four 4 KiB writes queued in four slots and handed to the kernel by one flush: each completes with its slot's
    tag and the 4096 bytes written, each at its own offset; a slot still in flight cannot be queued again."""
    import ctypes
    import mmap

    from gpuadvisor.bench.aio import PREAD, PWRITE, Aio

    fd = os.open(tmp_path / "f", os.O_CREAT | os.O_RDWR, 0o600)
    bufs = [mmap.mmap(-1, 4096) for _ in range(4)]
    cells = [(ctypes.c_char * 4096).from_buffer(b) for b in bufs]
    try:
        with Aio(4) as aio:
            for k in range(4):
                bufs[k][:] = bytes([65 + k]) * 4096
                aio.queue(k, PWRITE, fd, ctypes.addressof(cells[k]), 4096, (3 - k) * 4096)
            with pytest.raises(ValueError, match="slot 2 is still in flight"):
                aio.queue(2, PWRITE, fd, ctypes.addressof(cells[2]), 4096, 0)
            aio.flush()
            done: list[tuple[int, int]] = []
            while len(done) < 4:
                done += aio.reap()
            assert sorted(done) == [(0, 4096), (1, 4096), (2, 4096), (3, 4096)]
            assert os.pread(fd, 4 * 4096, 0) == b"D" * 4096 + b"C" * 4096 + b"B" * 4096 + b"A" * 4096
            aio.submit(1, PREAD, fd, ctypes.addressof(cells[1]), 4096, 0)  # the slot is free again
            assert aio.reap() == [(1, 4096)] and bufs[1][:1] == b"D"
    finally:
        del cells
        for b in bufs:
            b.close()
        os.close(fd)
