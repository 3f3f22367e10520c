"""Node pairs (``bench --pairs``): all-reduce between every two nodes of a multi-node job, to find the one slow
link or NIC, as one bisects a slow all-reduce in a large job.

Rounds follow the circle method of a round-robin tournament: N nodes (one idle per round when N is odd) meet
in N-1 rounds (N rounds when odd) of disjoint pairs that run at once, each pair in its own process group
(``torch.distributed.new_subgroups_by_enumeration``, all of both nodes' ranks). Each pair times ``iters``
all-reduces of one size after ``warmup``; its time is the slowest rank's total of the timed loop / iters (nccl-tests'
definition), busbw = S/t x 2(n-1)/n as
nccl-tests. Rank 0 records one measurement per pair, its ranks' host names with it.
"""

from __future__ import annotations

import types
from typing import Any

from gpuadvisor.bench.formulas import algbw_gbps, busbw_factor

NOTE = "node pair"


def rounds(nodes: list[str]) -> list[list[tuple[str, str]]]:
    """Round-robin schedule: every pair exactly once, no node twice in a round."""
    ring: list[str | None] = list(nodes) + ([None] if len(nodes) % 2 else [])
    n = len(ring)
    out = []
    for _ in range(n - 1):
        pairs = [(ring[i], ring[n - 1 - i]) for i in range(n // 2)]
        out.append(
            [(a, b) if nodes.index(a) < nodes.index(b) else (b, a) for a, b in pairs if a is not None and b is not None]
        )
        ring = [ring[0], ring[-1], *ring[1:-1]]
    return out


def run(
    torch: Any,
    dist: Any,
    *,
    rank: int,
    ranks: list[dict[str, Any]],
    events: Any,
    device: Any,
    backend: str,
    size_bytes: int,
    warmup: int,
    iters: int,
    cuda: bool,
) -> None:
    hosts = list(dict.fromkeys(r["host"] for r in ranks))
    if len(hosts) < 2:
        return
    members = {h: [i for i, r in enumerate(ranks) if r["host"] == h] for h in hosts}
    schedule = rounds(hosts)
    count = max(1, size_bytes // 4)
    for k, pairs in enumerate(schedule, 1):
        groups = [members[a] + members[b] for a, b in pairs]
        sub, _ = dist.new_subgroups_by_enumeration(groups)
        mine = next((i for i, g in enumerate(groups) if rank in g), None)
        result = torch.zeros(2 * len(pairs), dtype=torch.float64, device=device)
        if mine is not None and sub is not None:
            n = len(groups[mine])
            buf = torch.zeros(count, dtype=torch.float32, device=device)
            proxy = types.SimpleNamespace(barrier=lambda sub=sub: dist.barrier(group=sub))
            from gpuadvisor.bench.timing import CpuTimer, CudaTimer

            timer = CudaTimer(proxy, torch) if cuda else CpuTimer(proxy)
            op = lambda buf=buf, sub=sub: dist.all_reduce(buf, group=sub)  # noqa: E731
            for _ in range(warmup):
                op()
            t = torch.tensor([timer.run(op, iters)], dtype=torch.float64, device=device)
            dist.all_reduce(t, op=dist.ReduceOp.MAX, group=sub)
            if rank == groups[mine][0]:
                result[2 * mine] = t.item()
                result[2 * mine + 1] = float(n)
        dist.all_reduce(result)  # the leaders' times reach rank 0
        if rank != 0:
            continue
        for i, (a, b) in enumerate(pairs):
            t_s, n = float(result[2 * i].item()), int(result[2 * i + 1].item())
            key = f"pair {a}+{b}"
            sub_ranks = [ranks[j] for j in groups[i]]
            events.emit(
                "begin",
                key=key,
                kind="all_reduce",
                backend=backend,
                world_size=n,
                ranks=sub_ranks,
                method=(
                    f"torch.distributed all_reduce (float32, sum, in place) between nodes {a} and {b} "
                    f"alone in its process group, round {k} of {len(schedule)} (disjoint pairs at once)"
                ),
                warmup_iters=warmup,
                iters=iters,
            )
            if t_s > 0:
                algbw = algbw_gbps(count * 4, t_s)
                events.emit(
                    "row",
                    key=key,
                    row={
                        "size_bytes": count * 4,
                        "count": count,
                        "dtype": "float32",
                        "time_us": t_s * 1e6,
                        "algbw_gbps": algbw,
                        "busbw_gbps": algbw * busbw_factor("all_reduce", n),
                        "correct": None,
                        "errors": None,
                    },
                    index=0,
                    planned=1,
                )
            events.emit(
                "end",
                key=key,
                status="ok" if t_s > 0 else "failed",
                error=None if t_s > 0 else "no time reported for this pair",
                notes=[f"{NOTE} {a} + {b}: round {k} of {len(schedule)}; one size, no correctness check"],
            )
