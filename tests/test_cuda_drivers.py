"""The CUDA version a driver reports, from its branch (CUDA Toolkit release notes, Table 3), held against every
real nvidia-smi banner in this repository's pastes ("Driver Version: X  CUDA Version: Y"), and used where a paste
shows only the driver (torch's collect_env)."""

from __future__ import annotations

import re
from pathlib import Path

from gpuadvisor.catalog.cuda_drivers import cuda_for_driver

TESTS = Path(__file__).parent
BANNER = re.compile(r"Driver Version:\s*(\d{3}\.\d+(?:\.\d+)?)\s+CUDA Version:\s*(\d+\.\d+)")
# A container whose image carries NVIDIA's CUDA forward-compatibility package: nvidia-smi reports the package's CUDA
# over the older driver (https://docs.nvidia.com/deploy/cuda-compatibility/, "Forward Compatibility": 12.4 over 525,
# 11.3 over 450 in the corpus). A banner may so show a later CUDA than the driver's branch ships, never an earlier one.


def _version(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def test_every_real_banner_agrees_with_the_table():
    pairs = {
        (p.name, m.group(1), m.group(2))
        for p in TESTS.rglob("*.txt")
        for m in BANNER.finditer(p.read_text(encoding="utf-8", errors="replace"))
    }
    assert len({(d, c) for _, d, c in pairs}) >= 20  # drivers 418 to 595, Linux and Windows
    table = {(f, d, c): cuda_for_driver(d) for f, d, c in pairs}
    assert [k for k, t in sorted(table.items()) if t is not None and _version(k[2]) < _version(t)] == []
    agree = [k for k, t in table.items() if t == k[2]]
    later = sorted(k for k, t in table.items() if t is not None and _version(k[2]) > _version(t))
    assert len(agree) >= 10 * len(later)  # forward compatibility is the exception, the table the rule


def test_drivers_outside_the_table_are_not_guessed():
    assert cuda_for_driver("367.48") is None  # before CUDA 8.0's branch
    assert cuda_for_driver("610.10") is None  # past the last branch listed: a later CUDA may have come with it
    assert cuda_for_driver("ERR!") is None and cuda_for_driver(None) is None
    assert cuda_for_driver("418.67") == "10.1"
