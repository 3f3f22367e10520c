"""Published reference measurements: "is this number normal?" for GPU models that have one.

Two kinds of figure, kept apart:

- ``typical``: what a healthy machine of that model measured, published with the run (judged with the same
  warn/fail ratios as the rig's own link figure);
- ``floor``: a production health check's pass mark for that model (a measurement below it would drain the
  node in that fleet; judged as a warning, since floors are set for one vendor's platform).

Each entry names its source. Only add entries with a public, checkable source.
"""

from __future__ import annotations

from dataclasses import dataclass

SRC_H100_RING = (
    "NCCL maintainer S. Jeaugey, github.com/NVIDIA/nccl-tests/issues/212: on 8x H100 SXM 'NCCL can get an "
    "effective NVLink bandwidth of 370GB/s' (ring; NVLink SHARP all-reduce peaks at ~480 GB/s busbw); "
    "Azure HPC NHC passes ND H100 v5 nodes at 460 GB/s with NVLS (github.com/Azure/azurehpc-health-checks "
    "conf/nd96isr_h100_v5.conf)"
)
SRC_A100_8 = (
    "github.com/NVIDIA/nccl-tests/issues/175: single node 8x A100 SXM, all_reduce_perf -b 8 -e 4G -g 8: "
    "232.54 GB/s busbw; Azure HPC NHC passes ND A100 v4 nodes at 228 GB/s (conf/nd96amsr_a100_v4.conf)"
)
SRC_H100_H2D = (
    "Azure HPC NHC check_cuda_bw 52 on ND H100 v5 (8x H100 SXM, PCIe 5.0): the lower of pinned host-to-device "
    "and device-to-host, 128 MiB per GPU, must reach 52 GB/s (github.com/Azure/azurehpc-health-checks "
    "conf/nd96isr_h100_v5.conf, customTests/azure_cuda_bandwidth.nhc)"
)
SRC_A100_H2D = (
    "Azure HPC NHC check_cuda_bw 24 on ND A100 v4 (8x A100 SXM, PCIe 4.0): the lower of pinned host-to-device "
    "and device-to-host must reach 24 GB/s (github.com/Azure/azurehpc-health-checks conf/nd96amsr_a100_v4.conf)"
)


@dataclass(frozen=True)
class Reference:
    kinds: tuple[str, ...]  # measurement kinds it applies to
    model: str  # what it is for, in words
    require: tuple[str, ...]  # substrings the GPU name must all contain (case-insensitive)
    exclude: tuple[str, ...]  # substrings it must not contain
    world_size: int | None  # collectives: number of GPUs; None for per-GPU copies
    value_gbps: float
    role: str  # typical | floor
    source: str

    def matches(self, gpu_name: str | None, kind: str, world_size: int | None) -> bool:
        if kind not in self.kinds or not gpu_name:
            return False
        name = gpu_name.lower()
        if not all(s.lower() in name for s in self.require) or any(s.lower() in name for s in self.exclude):
            return False
        return self.world_size is None or self.world_size == world_size


REFERENCES: tuple[Reference, ...] = (
    Reference(
        ("all_reduce",),
        "8x H100 SXM (NVLink 4, NVSwitch), ring all-reduce busbw",
        ("H100", "HBM3"),
        ("PCIe", "NVL"),
        8,
        370.0,
        "typical",
        SRC_H100_RING,
    ),
    Reference(
        ("all_reduce",),
        "8x A100 SXM (NVLink 3, NVSwitch), all-reduce busbw",
        ("A100", "SXM"),
        (),
        8,
        232.5,
        "typical",
        SRC_A100_8,
    ),
    Reference(
        ("h2d", "d2h"),
        "H100 SXM on PCIe 5.0 x16, pinned host<->device",
        ("H100", "HBM3"),
        ("PCIe", "NVL"),
        None,
        52.0,
        "floor",
        SRC_H100_H2D,
    ),
    Reference(
        ("h2d", "d2h"),
        "A100 SXM on PCIe 4.0 x16, pinned host<->device",
        ("A100", "SXM"),
        (),
        None,
        24.0,
        "floor",
        SRC_A100_H2D,
    ),
)


def find_reference(gpu_names: list[str | None], kind: str, world_size: int | None) -> Reference | None:
    """The reference for a measurement whose GPUs all carry a matching name, or None."""
    if not gpu_names:
        return None
    for ref in REFERENCES:
        if all(ref.matches(n, kind, world_size) for n in gpu_names):
            return ref
    return None
