"""Benchmark presets: how many sizes, iterations and copy runs each of --quick, default and --full does.

The figures follow the tools they imitate: nccl-tests defaults to 5 warm-up and 20 timed iterations
(``-w 5 -n 20``); nvbandwidth copies a 64 MiB buffer 16 times per trial (``--bufferSize``, ``--loopCount``)
and reports the median of 3 trials; its documentation recommends large buffers for peak figures.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from gpuadvisor.errors import InputError

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB


@dataclass(frozen=True)
class Preset:
    name: str
    min_bytes: int  # collective sweep start (S of nccl-tests)
    max_bytes: int  # collective sweep end, before the memory and time bounds
    warmup_iters: int
    iters: int
    copy_bytes: int  # buffer of one host<->device, device-to-device or peer copy
    copies_per_run: int  # copies queued behind one spin kernel
    copy_runs: int  # runs; the median is reported
    latency_reps: int  # 4-byte peer copies averaged for the latency figure
    budget_s: float  # the whole run: every phase, process start-up included
    p2p_off: bool = True  # also measure peer copies with P2P access disabled

    def with_overrides(self, **kw: int | float | None) -> Preset:
        """A copy with the given fields replaced (None leaves a field as it is)."""
        changes = {k: v for k, v in kw.items() if v is not None}
        p = dataclasses.replace(self, **changes)  # type: ignore[arg-type]  # field names checked by replace
        if p.min_bytes < 1 or p.max_bytes < p.min_bytes:
            raise InputError(f"bench sizes: need 1 <= min bytes <= max bytes, got {p.min_bytes} and {p.max_bytes}")
        if p.iters < 1 or p.warmup_iters < 0:
            raise InputError(f"bench iterations: need iters >= 1 and warm-up >= 0, got {p.iters} and {p.warmup_iters}")
        if p.budget_s <= 0:
            raise InputError(f"bench budget: must be a positive number of seconds, got {p.budget_s}")
        return p


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        # quick: under a minute on an 8-GPU node: 11 sizes of every collective, short copy runs. The sweep still ends at
        # 1 GiB: busbw keeps rising well past 64 MiB on NVLink ("256M is too small to reach peak bandwidth" on
        # 8x H100, NCCL maintainer, github.com/NVIDIA/nccl-tests/issues/212), and the headline is judged against
        # the links' peak. The large sizes cost milliseconds each on GPUs; local gloo stops at 64 MiB (runner).
        #
        # name, sweep from and to, warm-up and timed iterations; copies: bytes, per run, runs; latency reps; budget
        Preset("quick", 1 * MiB, 1 * GiB, 2, 5, 64 * MiB, 4, 3, 20, 55.0),
        Preset("default", 8, 1 * GiB, 5, 20, 256 * MiB, 8, 5, 100, 300.0),
        Preset("full", 8, 8 * GiB, 10, 50, 512 * MiB, 16, 7, 1000, 1800.0),
    )
}


def get_preset(preset: str | Preset) -> Preset:
    if isinstance(preset, Preset):
        return preset
    try:
        return PRESETS[preset]
    except KeyError:
        raise InputError(f"unknown bench preset {preset!r} (known: {', '.join(PRESETS)})") from None


_SIZE = re.compile(r"^\s*(\d+)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """A byte count as nccl-tests takes it: 8, 64K, 1M, 8G (K/M/G are powers of 1024; KiB, MB accepted)."""
    m = _SIZE.match(str(text))
    if not m:
        raise InputError(f"size {text!r}: expected a byte count such as 8, 64K, 256M or 1G")
    mult = {"": 1, "k": KiB, "m": MiB, "g": GiB, "t": 1024 * GiB}[m.group(2).lower()]
    value = int(m.group(1)) * mult
    if value < 1:
        raise InputError(f"size {text!r}: must be at least 1 byte")
    return value
