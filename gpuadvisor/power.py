"""One power model for a machine: what it draws at load and the PSU rating it needs.

Used by the PSU rule (GA405) and by `gpuadvisor plan`'s power and energy figures, so that the two agree.

Load: every GPU at its board power + every CPU at its TDP + the rest of the platform (board, memory, disks,
fans): 150 W, the figure Intel's platform power specialist uses for "the rest of the hardware in the box" when
sizing an ATX 3.0 PSU (300 W GPU + 300 W CPU + 150 W on a 750 W ATX 3.0 unit).

PSU needed: at least that load (an ATX 3.0 PSU with a 12VHPWR connector must ride out excursions to 200 % of
its rating for 100 us, and the PCIe CEM 5.0 card spec lets a card spike to 3x its sustained power for 100 us:
Intel ATX Version 3.0 Multi Rail Desktop Platform Power Supply Design Guide); and, for a GeForce card, at least
NVIDIA's published "minimum system power" for one card plus the board power of each further card. An older
ATX 2.x unit has no excursion margin: Intel estimates it needs about 1,100 W where an ATX 3.0 unit needs 750 W.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

PLATFORM_W = 150.0
PLATFORM_SOURCE = (
    "Intel (Stephen Eastman, platform power) on ATX 3.0 sizing: a 300 W GPU + 300 W CPU + 150 W "
    "for the rest on a 750 W ATX 3.0 PSU, interview with PCWorld, as reported at "
    "https://www.tweaktown.com/news/85717/pcie-5-0-gpus-can-have-power-excursions-use-up-to-1800w-of/"
    "index.html"
)
ATX3_SOURCE = (
    "Intel ATX Version 3.0 Multi Rail Desktop Platform Power Supply Design Guide (excursions to 200 % of "
    "rating for 100 us); https://edc.intel.com/content/www/us/en/design/ipla/software-development-"
    "platforms/client/platforms/alder-lake-desktop/atx-version-3-0-multi-rail-desktop-platform-power-"
    "supply-design-guide/2.0/dc-output-current-required/"
)

# NVIDIA's "Required System Power" / "Minimum system power" on each GeForce card's specifications page: a
# system with one such card and a typical high-end CPU.
NVIDIA_MIN_SYSTEM_W: dict[str, tuple[float, str]] = {
    "rtx-3090": (750.0, "https://www.nvidia.com/en-us/geforce/graphics-cards/30-series/rtx-3090-3090ti/"),
    "rtx-4090": (850.0, "https://www.nvidia.com/en-us/geforce/graphics-cards/40-series/rtx-4090/"),
    "rtx-5090": (1000.0, "https://www.nvidia.com/en-us/geforce/graphics-cards/50-series/rtx-5090/"),
}


@dataclass
class PowerBudget:
    """A machine's power: the load, the PSU rating needed, and how each was reached."""

    load_w: float
    psu_needed_w: float
    gpu_w: float
    cpu_w: float | None  # None: the CPU's power is not known (not counted)
    platform_w: float
    basis: str
    notes: list[str] = field(default_factory=list)


def power_budget(
    gpu_board_w: list[float],
    gpu_ids: list[str | None],
    cpu_tdp_w: float | None,
    sockets: int = 1,
    platform_w: float = PLATFORM_W,
) -> PowerBudget:
    """The load and the PSU needed for GPUs at ``gpu_board_w`` and ``sockets`` CPUs of ``cpu_tdp_w`` each."""
    gpu_w = float(sum(gpu_board_w))
    cpu_w = None if cpu_tdp_w is None else float(cpu_tdp_w) * max(sockets, 1)
    load = gpu_w + (cpu_w or 0.0) + platform_w
    n = len(gpu_board_w)
    basis = (
        f"{n} GPU(s) at board power {gpu_w:g} W + "
        + (f"{max(sockets, 1)} x {cpu_tdp_w:g} W CPU TDP" if cpu_w is not None else "CPU power unknown (not counted)")
        + f" + {platform_w:g} W for the rest of the platform"
    )
    need = load
    notes: list[str] = []
    floors = []
    for i, gid in enumerate(gpu_ids):
        if gid in NVIDIA_MIN_SYSTEM_W:
            floor, url = NVIDIA_MIN_SYSTEM_W[gid]
            floors.append(floor + gpu_w - gpu_board_w[i])
            notes.append(f"NVIDIA's minimum system power for one {gid} is {floor:g} W ({url})")
            break
    if floors and max(floors) > need:
        need = max(floors)
        basis += f"; NVIDIA's minimum system power for the first card + the others' board power: {need:g} W"
    return PowerBudget(
        load_w=load,
        psu_needed_w=float(math.ceil(need / 50.0) * 50),
        gpu_w=gpu_w,
        cpu_w=cpu_w,
        platform_w=platform_w,
        basis=basis,
        notes=notes,
    )


def psu_fix(psu_w: float, need_w: float) -> str:
    """What to fit: the PSU rating to reach, or the second unit to add."""
    short = need_w - psu_w
    if psu_w >= 1600 or short > 600:
        return (
            f"add a second PSU of at least {math.ceil(short / 50) * 50:g} W (or replace it with {need_w:g} W "
            "in total), or cap the GPUs' power limits with nvidia-smi -pl"
        )
    return f"fit a PSU of at least {need_w:g} W (ATX 3.0), or cap the GPUs' power limits with nvidia-smi -pl"
