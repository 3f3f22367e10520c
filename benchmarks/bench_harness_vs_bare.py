"""Does the harness measure what a bare torch.distributed loop measures? gloo all-reduce, CPU, paired rounds.

    python benchmarks/bench_harness_vs_bare.py [--nproc 2] [--min 1M] [--max 64M] [--iters 50] [--warmup 5]
                                               [--rounds 8] [--large 16M]

Each round runs, at the same sizes, the bare loop and gpuadvisor's harness (``run_benchmarks``, only
all_reduce), one right after the other; the order alternates from round to round (bare first in odd rounds,
harness first in even ones), so a machine that slows down or speeds up during a run does not favour one side.
The bare loop is the textbook one, as nccl-tests defines the time: zeros, warm-up, barrier, perf_counter,
``iters`` all_reduce calls, perf_counter, time / iters, slowest rank; busbw = S/t × 2(n-1)/n. The harness
reports the same statistic.

Per size it prints the paired ratio harness / bare over the rounds: its median, interquartile range and
min-max, so "within 5%" can be decided on a loaded machine where single runs of gloo over loopback vary by
10-25%. The last column is the bare loop's own median per-iteration time against its total / iters (what the
harness used to report): the bias of the old statistic. At sizes from ``--large`` (default 16 MiB: at least
~7 ms per all-reduce on gloo, well above scheduling jitter) the median paired ratio must lie within 5% of 1;
the script exits 1 otherwise. Each bare worker starts its own session, as each harness worker does: with the
kernel's autogroup scheduling a session is a scheduling group, and on a loaded machine the side whose workers
share a session gets less CPU (a first run without this read the harness 2-5x above the bare loop at load
average ~30 on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings


def bare_worker(rank: int, n: int, port: int, sizes: list[int], warmup: int, iters: int, out: str) -> None:
    # Each harness worker runs in its own session (start_new_session); with the kernel's autogroup scheduling
    # (sched_autogroup_enabled=1) a session is a scheduling group, so on a loaded machine a worker left in this
    # script's session would get a smaller CPU share than the harness's and the comparison would measure that.
    os.setsid()
    warnings.filterwarnings("ignore")
    import torch
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=n)
    result = {}
    for size in sizes:
        t = torch.zeros(size // 4, dtype=torch.float32)
        for _ in range(warmup):
            dist.all_reduce(t)
        dist.barrier()
        stamps = [time.perf_counter()]
        for _ in range(iters):
            dist.all_reduce(t)
            stamps.append(time.perf_counter())
        gaps = sorted(b - a for a, b in zip(stamps, stamps[1:], strict=False))
        mid = gaps[len(gaps) // 2] if len(gaps) % 2 else (gaps[len(gaps) // 2 - 1] + gaps[len(gaps) // 2]) / 2
        per_iter = torch.tensor([(stamps[-1] - stamps[0]) / iters, mid], dtype=torch.float64)
        dist.all_reduce(per_iter, op=dist.ReduceOp.MAX)
        result[size] = per_iter.tolist()
    if rank == 0:
        with open(out, "w") as f:
            json.dump(result, f)
    dist.destroy_process_group()


def bare(n: int, sizes: list[int], warmup: int, iters: int) -> dict[int, list[float]]:
    """Per size: [mean time per iteration (total / iters), median per-iteration time], slowest rank."""
    import tempfile

    import torch.multiprocessing as mp

    from gpuadvisor.bench.launcher import free_port

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "bare.json")
        mp.spawn(bare_worker, args=(n, free_port(), sizes, warmup, iters, out), nprocs=n)
        with open(out) as f:
            return {int(k): v for k, v in json.load(f).items()}


def main() -> int:
    warnings.filterwarnings("ignore")
    from gpuadvisor.bench import Preset, run_benchmarks
    from gpuadvisor.bench.formulas import busbw_factor, doubling_sizes
    from gpuadvisor.bench.presets import parse_size
    from gpuadvisor.facts import Rig

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nproc", type=int, default=2)
    ap.add_argument("--min", default="1M")
    ap.add_argument("--max", default="64M")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--large", default="16M", help="smallest size the 5%% check applies to")
    a = ap.parse_args()
    n = a.nproc
    lo, hi = parse_size(a.min), parse_size(a.max)
    sizes = doubling_sizes(lo, hi)
    large = parse_size(a.large)
    factor = busbw_factor("all_reduce", n)

    os.environ.setdefault("PYTHONWARNINGS", "ignore")  # torch warns about numpy in every process
    preset = Preset(
        "compare",
        lo,
        hi,
        warmup_iters=a.warmup,
        iters=a.iters,
        copy_bytes=1,
        copies_per_run=1,
        copy_runs=1,
        latency_reps=1,
        budget_s=3600.0,
    )
    bare_runs: list[dict[int, float]] = []  # textbook: total time / iters
    bare_med: list[dict[int, float]] = []  # the same loop, median per-iteration time (the old harness statistic)
    harness_runs: list[dict[int, float]] = []
    orders: list[str] = []

    def run_bare() -> None:
        times = bare(n, sizes, a.warmup, a.iters)
        bare_runs.append({s: s / times[s][0] / 1e9 * factor for s in sizes})
        bare_med.append({s: s / times[s][1] / 1e9 * factor for s in sizes})

    def run_harness() -> bool:
        (m,) = run_benchmarks(Rig(), preset=preset, backend="gloo", nproc=n, only="all_reduce")
        if m.status != "ok":
            print(f"harness: {m.status}: {m.error}", file=sys.stderr)
            return False
        harness_runs.append({r.size_bytes: r.busbw_gbps for r in m.rows})
        return True

    for rnd in range(a.rounds):
        if rnd % 2 == 0:
            run_bare()
            ok = run_harness()
            orders.append("B,H")
        else:
            ok = run_harness()
            run_bare()
            orders.append("H,B")
        if not ok:
            return 1

    print(
        f"gloo all_reduce, {n} processes, {a.warmup} warm-up + {a.iters} timed iterations per size, "
        f"{a.rounds} rounds (order alternating: {' '.join(orders)}), busbw in GB/s (1e9 B/s), factor 2(n-1)/n = "
        f"{factor:g}"
    )
    print(
        "paired ratio = harness / bare in the same round (both: total time of the timed loop / iters, slowest rank); "
        "old stat = the bare loop's median per-iteration busbw / its total-over-iters busbw"
    )
    print(f"{'size (B)':>12} {'median':>8} {'IQR':>13} {'min-max':>13} {'bare GB/s':>10} {'old stat':>9}")
    worst = 0.0
    for s in sizes:
        ratios = [hr[s] / br[s] for hr, br in zip(harness_runs, bare_runs, strict=True)]
        med = statistics.median(ratios)
        q = statistics.quantiles(ratios, n=4, method="inclusive") if len(ratios) >= 2 else [med, med, med]
        old = statistics.median(bm[s] / br[s] for bm, br in zip(bare_med, bare_runs, strict=True))
        flag = ""
        if s >= large:
            worst = max(worst, abs(med - 1))
            flag = " *"
        print(
            f"{s:>12} {med:>6.3f}{flag:2} {q[0]:>6.3f}-{q[2]:<6.3f} {min(ratios):>6.3f}-{max(ratios):<6.3f} "
            f"{statistics.median(br[s] for br in bare_runs):>10.3f} {old:>9.3f}"
        )
    ok = worst <= 0.05
    print(
        f"* checked: largest deviation of the median paired ratio at >= {large} B: {worst * 100:.1f}% -> "
        f"{'within' if ok else 'OUTSIDE'} 5%"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
