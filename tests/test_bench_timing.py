"""The collective timer's statistic: nccl-tests' total / iters, not the median of per-iteration gaps."""

from __future__ import annotations

import pytest

from gpuadvisor.bench.timing import CpuTimer, median


class _Dist:
    def __init__(self) -> None:
        self.barriers = 0

    def barrier(self) -> None:
        self.barriers += 1


class _Clock:
    """A clock that advances by the given gaps: one gap per operation, as a real loop's completions."""

    def __init__(self, gaps: list[float]) -> None:
        self.gaps = gaps
        self.now = 100.0
        self.reads: list[float] = []

    def op(self) -> None:
        self.now += self.gaps[len(self.reads) - 1]
        self.reads.append(self.now)

    def __call__(self) -> float:
        if not self.reads:
            self.reads.append(self.now)
        return self.now


# Per-iteration times of a gloo all-reduce under load: most near 10 ms, a few much slower (descheduling).
GAPS = [0.010, 0.010, 0.011, 0.010, 0.010, 0.030, 0.010, 0.011, 0.010, 0.028]


def test_old_statistic_is_biased_and_the_new_one_is_total_over_iters():
    clock = _Clock(GAPS)
    dist = _Dist()
    per_op = CpuTimer(dist, clock=clock).run(clock.op, len(GAPS))
    assert dist.barriers == 1
    total = sum(GAPS)
    assert per_op == pytest.approx(total / len(GAPS), rel=1e-12)  # 0.014 s
    old = median(GAPS)  # the statistic the harness used before: 0.010 s
    assert old == pytest.approx(0.010)
    # the bias the issue saw: bandwidth from the median reads 40% high here (14-19% on its 16 MiB runs)
    assert per_op / old == pytest.approx(1.4, rel=1e-9)


def test_equal_gaps_give_equal_statistics():
    gaps = [0.005] * 7
    clock = _Clock(gaps)
    assert CpuTimer(_Dist(), clock=clock).run(clock.op, 7) == pytest.approx(median(gaps), rel=1e-12)


def test_no_iterations_is_an_error():
    with pytest.raises(ValueError):
        CpuTimer(_Dist()).run(lambda: None, 0)
