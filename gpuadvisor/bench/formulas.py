"""nccl-tests bandwidth definitions: algbw, busbw and the size S each collective is reported at.

Source: NVIDIA nccl-tests, ``doc/PERFORMANCE.md`` ("Performance reported by NCCL tests"):

- ``algbw = S / t``, S the operation's size in bytes, t the time of one operation;
- ``busbw = algbw × factor`` with factor ``2(n-1)/n`` for AllReduce, ``(n-1)/n`` for ReduceScatter and
  AllGather, ``1`` for Broadcast (and Reduce, Send/Recv);
- for ReduceScatter and AllGather, S is the size of the *total* array: ``recvcount × sizeof(type) × n`` for
  ReduceScatter and ``sendcount × sizeof(type) × n`` for AllGather, the per-rank count times n. The ``size``
  and ``count`` columns nccl-tests prints are that total.

GB/s here is 1e9 bytes/s, as nccl-tests prints it.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuadvisor.facts import COLLECTIVES

NCCL_TESTS_SOURCE = "nccl-tests doc/PERFORMANCE.md"


def busbw_factor(kind: str, n: int) -> float:
    """The bus-bandwidth correction factor of nccl-tests doc/PERFORMANCE.md ("Summary") for n ranks."""
    if n < 1:
        raise ValueError(f"world size must be at least 1, got {n}")
    if kind == "all_reduce":
        return 2.0 * (n - 1) / n
    if kind in ("all_gather", "reduce_scatter"):
        return (n - 1) / n
    if kind == "broadcast":
        return 1.0
    raise ValueError(f"unknown collective {kind!r} (known: {', '.join(COLLECTIVES)})")


def algbw_gbps(size_bytes: int, seconds: float) -> float:
    """``algbw = S / t`` in GB/s (1e9 B/s); 0 when no time was measured."""
    return size_bytes / seconds / 1e9 if seconds > 0 else 0.0


def busbw_gbps(kind: str, n: int, size_bytes: int, seconds: float) -> float:
    return algbw_gbps(size_bytes, seconds) * busbw_factor(kind, n)


@dataclass(frozen=True)
class CollectiveShape:
    """How a reported size S maps onto the buffers of one collective call on each rank."""

    size_bytes: int  # S as nccl-tests reports it (total array for all_gather / reduce_scatter)
    count: int  # elements in S (the 'count' column)
    per_rank_count: int  # the per-rank input of all_gather, the per-rank output of reduce_scatter, else count
    elem_bytes: int


def shape(kind: str, n: int, target_bytes: int, elem_bytes: int = 4) -> CollectiveShape:
    """The largest valid collective of at most ``target_bytes`` (at least one element per rank).

    As nccl-tests does, the element count of all_gather / reduce_scatter is rounded down to a multiple of n,
    so S = per-rank count × n × element size.
    """
    count = max(1, target_bytes // elem_bytes)
    if kind in ("all_gather", "reduce_scatter"):
        per_rank = max(1, count // n)
        count = per_rank * n
    else:
        busbw_factor(kind, n)  # validates kind
        per_rank = count
    return CollectiveShape(size_bytes=count * elem_bytes, count=count, per_rank_count=per_rank, elem_bytes=elem_bytes)


def doubling_sizes(min_bytes: int, max_bytes: int) -> list[int]:
    """min, 2·min, 4·min, ... up to max (inclusive), as nccl-tests ``-b min -e max -f 2``."""
    if min_bytes < 1 or max_bytes < min_bytes:
        raise ValueError(f"need 1 <= min_bytes <= max_bytes, got {min_bytes} and {max_bytes}")
    out = []
    s = min_bytes
    while s <= max_bytes:
        out.append(s)
        s *= 2
    return out
