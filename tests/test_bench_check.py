"""The collective correctness check (nccl-tests -c) in one process, against stand-in collectives.

The stand-ins compute what n ranks filled with the benchmark's own patterns would receive, so a correct
stand-in must pass the check, and one that does nothing or delivers the wrong rank's chunk must fail it.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from gpuadvisor.bench.collectives import _Case  # noqa: E402


class StandIn:
    """torch.distributed as rank ``rank`` of ``n`` sees it; ``mode``: ok | noop | wrong_chunk."""

    def __init__(self, n: int, rank: int, mode: str = "ok") -> None:
        self.n, self.rank, self.mode = n, rank, mode

    def all_gather_into_tensor(self, out, inp) -> None:
        if self.mode == "noop":
            return
        chunks = out.view(self.n, -1)
        for j in range(self.n):  # rank j's input: the same pattern, offset 128 × (j + 1)
            src = (self.rank + 1) % self.n if self.mode == "wrong_chunk" and j == self.rank else j
            chunks[j].copy_(inp - 128 * (self.rank + 1) + 128 * (src + 1))

    def reduce_scatter_tensor(self, out, inp) -> None:
        if self.mode == "noop":
            return
        n, r = self.n, self.rank
        total = n * inp + (n * (n + 1) / 2 - n * (r + 1))  # sum of every rank's input (offsets r + 1)
        chunk = (r + 1) % n if self.mode == "wrong_chunk" else r
        out.copy_(total.view(n, -1)[chunk])

    def all_reduce(self, t) -> None:
        if self.mode == "noop":
            return
        n, r = self.n, self.rank
        t.copy_(n * t + (n * (n + 1) / 2 - n * (r + 1)))

    def broadcast(self, t, src: int = 0) -> None:
        if self.mode == "noop" or self.rank == src:
            return
        from gpuadvisor.bench.collectives import pattern

        t.copy_(pattern(torch, t.numel(), device=t.device, offset=7))


def _case(kind: str, n: int, rank: int, per_rank: int, mode: str) -> _Case:
    count = per_rank * n if kind in ("all_gather", "reduce_scatter") else per_rank
    return _Case(torch, StandIn(n, rank, mode), kind, n, rank, count, per_rank, torch.device("cpu"))


@pytest.mark.parametrize("kind", ["all_reduce", "all_gather", "reduce_scatter", "broadcast"])
@pytest.mark.parametrize(("n", "rank"), [(2, 1), (3, 0), (8, 5)])
def test_a_correct_collective_passes(kind, n, rank):
    case = _case(kind, n, rank, 1024, "ok")
    case.fill_for_timing()
    case.op()
    assert case.check(corrupt=False) == 0
    assert case.check(corrupt=True) == 1  # the test hook: one element off


@pytest.mark.parametrize("kind", ["all_reduce", "all_gather", "reduce_scatter", "broadcast"])
def test_a_collective_that_does_nothing_fails_even_after_correct_timed_runs(kind):
    """The timed iterations leave a correct result in the output; the check must not read it as its own."""
    rank = 1  # broadcast's root keeps its own data: check a receiver
    good = _case(kind, 4, rank, 1024, "ok")
    good.fill_for_timing()
    for _ in range(3):
        good.op()
    good.dist.mode = "noop"
    wrong = good.check(corrupt=False)
    assert wrong == (1024 * 4 if kind == "all_gather" else 1024)  # every element of the output


@pytest.mark.parametrize("kind", ["all_gather", "reduce_scatter"])
def test_a_chunk_delivered_to_the_wrong_rank_fails(kind):
    # 1024 elements per rank: a multiple of the pattern period, so only per-chunk values tell chunks apart
    case = _case(kind, 4, 2, 1024, "wrong_chunk")
    assert case.check(corrupt=False) > 0
