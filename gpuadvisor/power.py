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

from gpuadvisor.plain import FieldsDict
from gpuadvisor.power_curves import COMPUTE, DECODE, capped_speed_of, sources, spread
from gpuadvisor.text import plural

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


# -- the circuit a machine is plugged into -------------------------------------------------------------------------

NEC_CONTINUOUS = (
    0.80,
    "NEC 210.19(A)(1) and 210.20(A): a branch circuit's conductors and breaker are sized for 125 % of a continuous "
    "load (3 hours or more), so a continuous load may use 80 % of the rating: 1,440 W on 120 V / 15 A, 1,920 W on "
    "120 V / 20 A",
)
IEC_CONTINUOUS = (
    1.0,
    "assumed for a 230 V circuit: IEC 60898 breakers are rated for the current they carry continuously and "
    "neither IEC 60364 nor the UK wiring regulations have an 80 % rule (IET forum, "
    "https://engx.theiet.org/f/wiring-and-regulations/24361/80-loading-in-small-power-lighting-circuit-breakers); "
    "the plug may limit less (a UK BS 1363 plug is fused at 13 A)",
)


@dataclass
class Circuit:
    """The wall circuit(s) a machine is plugged into: their rating and what a continuous load may use."""

    text: str
    count: int
    volts: float | None
    amps: float | None
    watts: float  # the rating, volts x amps (or the watts given)
    continuous_fraction: float
    basis: str

    @property
    def continuous_w(self) -> float:
        """What one circuit carries continuously."""
        return self.watts * self.continuous_fraction

    def label(self) -> str:
        one = f"{self.volts:g} V / {self.amps:g} A" if self.volts and self.amps else f"{self.watts:,.0f} W"
        return f"{self.count} x " * (self.count > 1) + f"{one} ({self.continuous_w:,.0f} W continuous)"


def parse_circuit(text: str) -> Circuit:
    """``120V/15A``, ``230V/16A``, ``2x120V/20A`` (two circuits), ``1800W`` or ``2.4kW``; one line if not."""
    import re

    from gpuadvisor.errors import InputError

    t = text.strip().lower().replace(" ", "")
    m = re.fullmatch(r"(?:(\d{1,2})x)?(?:(\d+(?:\.\d+)?)v/(\d+(?:\.\d+)?)a|(\d+(?:\.\d+)?)(k?)w)", t)
    if not m:
        raise InputError(
            f"--circuit {text!r}: expected volts/amps (120V/15A, 230V/16A), watts (1800W, 2.4kW), "
            "optionally N circuits as 2x120V/20A"
        )
    count = int(m[1] or 1)
    volts: float | None
    amps: float | None
    if m[2]:
        volts, amps = float(m[2]), float(m[3])
        watts = volts * amps
    else:
        volts = amps = None
        watts = float(m[4]) * (1000 if m[5] else 1)
    if not (1 <= count <= 64) or not (100 <= watts <= 1e6) or (volts is not None and not 90 <= volts <= 480):
        raise InputError(f"--circuit {text!r}: 1-64 circuits of 90-480 V and 100 W to 1 MW each")
    if volts is None:
        frac, basis = 1.0, "the watts given are taken as what the circuit carries continuously"
    else:
        frac, basis = NEC_CONTINUOUS if volts < 200 else IEC_CONTINUOUS
    return Circuit(text, count, volts, amps, watts, frac, basis)


@dataclass
class CircuitFit(FieldsDict):
    """A machine on the stated circuit(s): whether its load fits, and the power cap that would make it fit."""

    fits: bool
    per_circuit_w: float
    circuits_used: int
    cap_w: float | None = None  # nvidia-smi -pl per GPU that makes it fit (None: fits as is, or cannot)
    speed_fraction: float | None = None  # predicted speed at that cap, of the workload's governing kind
    text: str = ""
    speeds: dict[str, float] = field(default_factory=dict)  # at that cap, by kind: compute (prefill), decode
    sources: list[str] = field(default_factory=list)  # the published sweeps behind the speeds: GPUs (URL)


KIND_WORDS = {COMPUTE: "compute-bound work (training, prompt reading)", DECODE: "one-stream writing (decode)"}


def circuit_fit(
    load_w: float,
    gpu_board_w: list[float],
    psus: int,
    circuit: Circuit,
    kinds: tuple[str, ...] = (COMPUTE,),
    gpu_class: str | None = None,
) -> CircuitFit:
    """``load_w`` (the one power model's load) drawn through ``psus`` supplies sharing it evenly, each on its own
    circuit while there are circuits: the busiest circuit's load against what it carries continuously; over it,
    the GPU power cap that brings it within, with its speed cost for each of ``kinds`` (the first governs: the
    row's speed), from the published sweeps of that kind (gpuadvisor.power_curves)."""
    used = max(1, min(psus, circuit.count))
    per_psu_group = math.ceil(max(psus, 1) / used)  # supplies sharing the busiest circuit
    share = per_psu_group / max(psus, 1)
    per_circuit = load_w * share
    limit = circuit.continuous_w
    one = circuit.label().split(" (")[0].removeprefix(f"{circuit.count} x ")
    where = f"on each of {used} circuits of {one}" if used > 1 else f"on one circuit of {one}"
    if psus > used:
        where += f" ({psus} PSUs sharing {'them' if used > 1 else 'it'})"
    if per_circuit <= limit:
        return CircuitFit(True, per_circuit, used, text=f"{per_circuit:,.0f} W {where}: fits")
    cap, frac = cap_for(limit / share, load_w, gpu_board_w)
    over = f"{per_circuit:,.0f} W {where}, over the {limit:,.0f} W a circuit carries continuously"
    speeds: dict[str, float] = {}
    used_sweeps = []
    for kind in kinds:
        v, sw = capped_speed_of(kind, frac, gpu_class) if cap > 0 else (None, [])
        if v is None:
            return CircuitFit(
                False, per_circuit, used, text=f"{over}; no power cap in the published sweeps' range fits it"
            )
        speeds[kind] = v
        used_sweeps += [s for s in sw if s not in used_sweeps]
    parts = []
    for k, v in speeds.items():
        lo, hi = spread(k, frac, used_sweeps)
        parts.append(
            f"{KIND_WORDS[k]} {1 - v:.0%} slower" + (f" (sweeps: {1 - hi:.0%}-{1 - lo:.0%})" * (hi - lo >= 0.01))
        )
    cost = ", ".join(parts)
    behind = sources(used_sweeps)
    return CircuitFit(
        False,
        per_circuit,
        used,
        cap,
        speeds[kinds[0]],
        f"{over}; fits with nvidia-smi -pl {cap:g} on each GPU ({frac:.0%} of board power: predicted {cost}, "
        f"the mean of {plural(len(behind), 'published power-limit sweep')})",
        speeds,
        behind,
    )


def cap_for(allowed_w: float, load_w: float, gpu_board_w: list[float]) -> tuple[float, float]:
    """The per-GPU cap (rounded down to 5 W) that brings ``load_w`` within ``allowed_w`` with everything but the
    GPUs held at its share of the load, and that cap as a fraction of board power (0, 0: none does)."""
    gpu_total = float(sum(gpu_board_w))
    n = len(gpu_board_w)
    allowed_gpu = allowed_w - (load_w - gpu_total)
    cap = math.floor(allowed_gpu / n / 5) * 5 if n and allowed_gpu > 0 else 0.0
    return cap, (cap / (gpu_total / n) if n and gpu_total else 0.0)
