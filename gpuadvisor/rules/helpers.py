"""Small helpers shared by the rule modules."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from gpuadvisor.facts import Gpu, Rig, Unavailable

GB = 1e9


def subject(gpu: Gpu) -> str:
    """ "GPU 2 0000:41:00.0" (the bus id when known)."""
    return f"{gpu.label} {gpu.bus_id}" if gpu.bus_id else gpu.label


def gpu_list(indices: Iterable[int]) -> str:
    """ "GPU 2" or "GPUs 0, 1, 3"."""
    idx = sorted(set(indices))
    if len(idx) == 1:
        return f"GPU {idx[0]}"
    return "GPUs " + ", ".join(str(i) for i in idx)


def why(obj: Unavailable, *names: str) -> str | None:
    """The first recorded reason among ``names`` on ``obj``."""
    for n in names:
        r = obj.why(n)
        if r:
            return r
    return None


def missing(obj: Unavailable, name: str, what: str | None = None) -> str:
    """A not-checked reason for a field: its recorded reason, or that the scan did not record it."""
    reason = obj.why(name)
    label = what or name
    return f"{label}: {reason}" if reason else f"{label} not recorded in this scan"


def parse_cpulist(text: str | None) -> set[int] | None:
    """Linux cpulist "0-3,8,10-11" -> {0,1,2,3,8,10,11}; None for None or unparsable text."""
    if text is None:
        return None
    out: set[int] = set()
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            return None
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        if hi < lo:
            return None
        out.update(range(lo, hi + 1))
    return out


def norm(name: str) -> str:
    """Lower-case letters and digits only: "HW Thermal Slowdown", "hw_thermal_slowdown" -> "hwthermalslowdown"."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def pairs(rig: Rig) -> Iterator[tuple[int, int]]:
    """(i, j) positions in rig.gpus with i < j."""
    n = len(rig.gpus)
    for i in range(n):
        for j in range(i + 1, n):
            yield i, j


def cell(matrix: list[list[str]] | None, i: int, j: int) -> str | None:
    if not matrix or i >= len(matrix) or j >= len(matrix[i]):
        return None
    return matrix[i][j]


def is_nvlink(code: str | None) -> bool:
    return code is not None and code.upper().startswith("NV")


def version_tuple(text: str | None) -> tuple[int, ...] | None:
    """ "12.4" -> (12, 4); "13.0.1" -> (13, 0, 1); None when it does not start with a number."""
    if not text:
        return None
    m = re.match(r"\s*(\d+(?:\.\d+)*)", text)
    if not m:
        return None
    return tuple(int(p) for p in m.group(1).split("."))


def fmt_gb(nbytes: float) -> str:
    return f"{nbytes / GB:.1f} GB"
