"""Real gloo collectives in several processes on the CPU: the benchmark path CI can run.

Sizes are small and iterations few so the whole file stays well under a minute.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

from gpuadvisor.bench import Preset, run_benchmarks
from gpuadvisor.bench.formulas import COLLECTIVES, busbw_factor
from gpuadvisor.facts import Rig, load

pytestmark = pytest.mark.slow

TINY = Preset(
    "tiny",
    min_bytes=4096,
    max_bytes=32768,
    warmup_iters=1,
    iters=3,
    copy_bytes=1 << 20,
    copies_per_run=1,
    copy_runs=1,
    latency_reps=1,
    budget_s=40.0,
)


@pytest.fixture(autouse=True)
def _no_job_env(monkeypatch):
    """Never join an outer torchrun/Slurm job by accident."""
    for v in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK", "GPUADVISOR_BENCH_FAULT"):
        monkeypatch.delenv(v, raising=False)


def _leftover_workers(mark: str) -> list[int]:
    out = []
    for p in psutil.process_iter(["pid"]):
        try:
            if p.environ().get("GPUADVISOR_TEST_MARK") == mark and p.pid != os.getpid():
                out.append(p.pid)
        except (psutil.Error, OSError):
            continue
    return out


@pytest.mark.parametrize("n", [2, 3])
def test_gloo_collectives_follow_nccl_tests(n, monkeypatch):
    mark = uuid.uuid4().hex
    monkeypatch.setenv("GPUADVISOR_TEST_MARK", mark)
    rig = Rig()
    progress: list[tuple[int, int]] = []
    ms = run_benchmarks(
        rig,
        preset=TINY,
        backend="gloo",
        nproc=n,
        only="collectives",
        progress=lambda d, t, label: progress.append((d, t)),
    )
    assert [m.kind for m in ms] == list(COLLECTIVES)
    assert rig.measurements == ms and rig.provenance["measurements"] == "measured"
    for m in ms:
        assert (m.status, m.backend, m.world_size, m.gpus) == ("ok", "gloo", n, []), m.error
        assert (m.warmup_iters, m.iters) == (1, 3)
        assert len(m.rows) == 4
        factor = busbw_factor(m.kind, n)
        for row, target in zip(m.rows, [4096, 8192, 16384, 32768], strict=True):
            assert row.correct is True and row.errors == 0
            if m.kind in ("all_gather", "reduce_scatter"):  # S = per-rank count × n × 4 bytes
                assert row.size_bytes == (target // 4 // n) * n * 4
            else:
                assert row.size_bytes == target
            assert row.count * 4 == row.size_bytes
            assert row.algbw_gbps == pytest.approx(row.size_bytes / (row.time_us * 1e-6) / 1e9, rel=1e-9)
            assert row.busbw_gbps == pytest.approx(row.algbw_gbps * factor, rel=1e-12)
            assert row.time_us > 0
        assert m.value_gbps == m.rows[-1].busbw_gbps
        assert m.expected_gbps is None and "gloo" in m.expected_source
    assert progress[-1] == (16, 16)
    assert _leftover_workers(mark) == []


def test_corrupted_result_fails_the_measurement(monkeypatch):
    monkeypatch.setenv("GPUADVISOR_BENCH_FAULT", "corrupt:1:all_gather")
    ms = run_benchmarks(
        Rig(), preset=TINY.with_overrides(max_bytes=8192), backend="gloo", nproc=2, only="all_reduce,all_gather"
    )
    by = {m.kind: m for m in ms}
    assert by["all_reduce"].status == "ok"
    bad = by["all_gather"]
    assert bad.status == "failed"
    assert bad.value_gbps is None and bad.ratio is None
    assert [(r.correct, r.errors) for r in bad.rows] == [(False, 1), (False, 1)]  # one element, each size
    assert bad.error == "correctness check: 2 wrong elements (summed over sizes and ranks)"


def test_dead_worker_is_a_failed_measurement(monkeypatch):
    monkeypatch.setenv("GPUADVISOR_BENCH_FAULT", "die:1:broadcast")
    ms = run_benchmarks(
        Rig(), preset=TINY.with_overrides(max_bytes=4096), backend="gloo", nproc=2, only="all_reduce,broadcast"
    )
    by = {m.kind: m for m in ms}
    assert by["all_reduce"].status == "ok" and len(by["all_reduce"].rows) == 1
    assert by["broadcast"].status == "failed"
    # the rank that died first is named first; rank 0 then fails on the closed connection
    err = by["broadcast"].error
    assert err.startswith("rank 1 exited with status 3: no Python exception and nothing on its output")
    assert "its last status: finished all_reduce" in err
    # rank 0 then fails on the closed connection, or, on a loaded machine, is still waiting when the grace ends
    if "then rank 0" in err:
        assert "then rank 0 exited with status 1: a peer rank went away first" in err


def _calibrated_budget() -> float:
    """A budget that lets this machine, loaded as it is now, start two workers and finish the all_reduce sweep
    with room to spare: twice what a fault-free run of the same sweep takes, plus 3 s (and never under 8 s).
    Measured from a known point, the call of run_benchmarks, so the worker start-up the budget has to cover is
    what this machine takes now, not what an idle one would."""
    t0 = time.monotonic()
    (m,) = run_benchmarks(
        Rig(), preset=TINY.with_overrides(max_bytes=16384), backend="gloo", nproc=2, only="all_reduce", budget_s=120
    )
    assert m.status == "ok", m.error
    return max(8.0, 2 * (time.monotonic() - t0) + 3.0)


def test_hung_worker_is_killed_within_budget_and_partial_results_saved(tmp_path, monkeypatch):
    """Rank 1 hangs at a fixed point of the protocol (on reaching all_gather, after all_reduce's results are on
    disk); the run must end within its budget, measured from the call, and keep what was measured before.
    Deterministic under load: the budget is calibrated on this machine now, and how many all_reduce sizes
    complete before the soft deadline does not matter, only that what completed is kept."""
    mark = uuid.uuid4().hex
    budget = _calibrated_budget()
    monkeypatch.setenv("GPUADVISOR_BENCH_FAULT", "hang:1:all_gather")
    monkeypatch.setenv("GPUADVISOR_TEST_MARK", mark)
    rig = Rig()
    t0 = time.monotonic()
    ms = run_benchmarks(
        rig,
        preset=TINY.with_overrides(max_bytes=16384),
        backend="gloo",
        nproc=2,
        only="all_reduce,all_gather,broadcast",
        budget_s=budget,
    )
    elapsed = time.monotonic() - t0
    assert elapsed <= budget + 0.5, (elapsed, budget)  # the hard deadline is budget - 1.5 s, then 1 s to kill
    by = {m.kind: m for m in ms}
    ar = by["all_reduce"]
    assert ar.status in ("ok", "partial") and ar.rows, ar.error  # under load the soft deadline may cut the sweep
    assert [r.size_bytes for r in ar.rows] == [4096, 8192, 16384][: len(ar.rows)]
    assert all(r.correct for r in ar.rows)
    assert by["all_gather"].status == "timeout"
    # where each killed rank was: rank 1 never started all_gather, rank 0 waits for it there
    assert (
        "killed rank 0 (in all_gather, before its first size), rank 1 (finished all_reduce)" in by["all_gather"].error
    )
    assert by["all_gather"].error.endswith("(nothing measured yet)")
    assert by["broadcast"].status == "timeout" and by["broadcast"].error.startswith("not measured")
    # saved: a scan written now holds the partial results, and reads back the same
    out = tmp_path / "scan.json"
    rig.save(out)
    again = {m.kind: m for m in load(out).measurements}
    assert [r.size_bytes for r in again["all_reduce"].rows] == [r.size_bytes for r in ar.rows]
    assert again["all_gather"].status == "timeout" and load(out).provenance["measurements"] == "measured"
    assert _leftover_workers(mark) == []


def test_hung_worker_cli_exits_1_and_saves_the_scan(tmp_path):
    """The command line around it: exit 1, the table printed with the timeout, the scan saved."""
    budget = _calibrated_budget()
    out = tmp_path / "scan.json"
    env = {**os.environ, "GPUADVISOR_BENCH_FAULT": "hang:1:all_gather"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpuadvisor",
            "bench",
            "--backend",
            "gloo",
            "--nproc",
            "2",
            "--only",
            "all_reduce,all_gather",
            "-b",
            "4K",
            "-e",
            "16K",
            "-n",
            "3",
            "-w",
            "1",
            "--budget",
            f"{budget:.1f}",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=budget + 120,
    )
    assert proc.returncode == 1, proc.stderr[-2000:]
    by = {m.kind: m for m in load(out).measurements}
    assert by["all_reduce"].rows and by["all_gather"].status == "timeout"
    assert "timeout" in proc.stdout and "#wrong" in proc.stdout


def test_cli_errors_are_one_line_exit_2():
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR")}
    p = subprocess.run(
        [sys.executable, "-m", "gpuadvisor", "bench", "--only", "all_reduce,alltoall"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert p.returncode == 2
    assert p.stderr.strip().splitlines()[-1].startswith("gpuadvisor: error: --only: unknown benchmark 'alltoall'")
    p = subprocess.run(
        [sys.executable, "-m", "gpuadvisor", "bench", "-e", "lots"], capture_output=True, text=True, env=env, timeout=60
    )
    assert p.returncode == 2 and "expected a byte count" in p.stderr


def test_joins_a_torchrun_job(tmp_path):
    """Under torchrun each rank's `gpuadvisor bench` runs one worker in that job; rank 0 saves the results."""
    out = tmp_path / "join.json"
    env = {
        k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "GPUADVISOR_BENCH_FAULT")
    }
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc-per-node",
            "2",
            "-m",
            "gpuadvisor",
            "bench",
            "--backend",
            "gloo",
            "--only",
            "all_reduce",
            "-b",
            "4K",
            "-e",
            "8K",
            "-n",
            "3",
            "-w",
            "1",
            "--budget",
            "30",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=90,
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    (m,) = load(out).measurements
    assert (m.kind, m.status, m.world_size, [r.size_bytes for r in m.rows]) == ("all_reduce", "ok", 2, [4096, 8192])
    assert "rank 1 done; rank 0 reports the results" in p.stderr
    assert p.stdout.count("# all_reduce · gloo · 2 rank(s)") == 1  # printed once, by rank 0


def test_default_gloo_sweep_is_capped_on_local_cpus():
    """The default preset ends at 1 GiB for GPUs; local gloo processes stop at 64 MiB and say so."""
    rig = Rig()
    (m,) = run_benchmarks(rig, preset="default", backend="gloo", nproc=2, only="broadcast", budget_s=120)
    assert m.status == "ok"
    assert m.rows[0].size_bytes == 8 and m.rows[-1].size_bytes == 64 * 2**20
    assert m.notes == ["gloo on local CPUs: sweep capped at 64 MiB (use -e SIZE or --full for more)"]


def _bench_cmd(out, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "gpuadvisor",
        "bench",
        "--backend",
        "gloo",
        "--nproc",
        "2",
        "--only",
        "all_reduce,all_gather,broadcast",
        "-b",
        "4K",
        "-e",
        "8K",
        "-n",
        "3",
        "-w",
        "1",
        "--budget",
        "60",
        "--json",
        str(out),
        *extra,
    ]


def _wait_for_status(mark: str, text: str, timeout: float = 30.0) -> None:
    """Until one of this test's workers says ``text`` in its status file."""
    end = time.time() + timeout
    while time.time() < end:
        for pid in _leftover_workers(mark):
            try:
                path = psutil.Process(pid).environ().get("GPUADVISOR_BENCH_STATUS")
                if path and text in Path(path).read_text(encoding="utf-8"):
                    return
            except (psutil.Error, OSError):
                continue
        time.sleep(0.1)
    raise AssertionError(f"no worker reached {text!r} in {timeout} s")


def _env(mark: str, fault: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR")}
    return {**env, "GPUADVISOR_BENCH_FAULT": fault, "GPUADVISOR_TEST_MARK": mark}


def test_sigterm_kills_the_workers_and_keeps_what_was_measured(tmp_path):
    """kill, Slurm at its time limit, systemd: the workers go, the results so far are printed and saved, 143."""
    import signal

    mark, out = uuid.uuid4().hex, tmp_path / "scan.json"
    proc = subprocess.Popen(
        _bench_cmd(out), env=_env(mark, "hang:1:all_gather"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        _wait_for_status(mark, "in all_gather")
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 143, stderr[-2000:]
    assert "interrupted by SIGTERM" in stderr
    by = {m.kind: m for m in load(out).measurements}
    assert by["all_reduce"].status == "ok" and [r.size_bytes for r in by["all_reduce"].rows] == [4096, 8192]
    assert by["all_gather"].status == "skipped"
    assert by["all_gather"].error.startswith("interrupted by SIGTERM after ")
    assert by["broadcast"].status == "skipped" and "not measured" in by["broadcast"].error
    assert "# all_reduce · gloo · 2 rank(s)" in stdout
    assert _leftover_workers(mark) == []


def test_workers_die_with_a_killed_supervisor(tmp_path):
    """SIGKILL leaves the supervisor no time to clean up: the kernel kills its workers (PR_SET_PDEATHSIG)."""
    mark = uuid.uuid4().hex
    proc = subprocess.Popen(
        _bench_cmd(tmp_path / "scan.json"),
        env=_env(mark, "hang:1:all_reduce"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        end = time.time() + 30
        while len(_leftover_workers(mark)) < 3 and time.time() < end:  # supervisor + 2 workers: kill it now
            time.sleep(0.05)
        assert len(_leftover_workers(mark)) == 3
    finally:
        proc.kill()
        proc.wait(timeout=10)
    end = time.time() + 5
    while _leftover_workers(mark) and time.time() < end:
        time.sleep(0.1)
    assert _leftover_workers(mark) == []
