"""One rig description format for `--simulate` and `plan`: a plan build (a built-in build's name, a GPU's rig
name, or a build .toml, compact or a rig description with a [plan] table) is simulated through the same layout
the plan uses; anything else is a simulator preset or rig description file, as before."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from gpuadvisor.errors import InputError

# Rigs by GPU, for `--simulate NAME`: the built-in build that carries each GPU, or a compact build of its own.
GPU_RIGS: dict[str, str | dict[str, Any]] = {
    "h200": "8xh200-sxm",
    "b200": "8xb200-sxm",
    "rtx-6000-ada": "4x6000ada-tr-pro",
    "l40s": "8xl40s-epyc",
    "l4": {
        "name": "l4",
        "title": "1x L4 in a 1-socket EPYC server",
        "description": "One NVIDIA L4 (24 GB, 72 W, PCIe Gen4 x16) in a single-socket EPYC 9354 server.",
        "gpu": "l4",
        "count": 1,
        "cpu": "epyc-9354",
        "ram_gib": 256,
        "psu_watts": 1200,
    },
}


def rig_names() -> list[str]:
    """Names `--simulate` takes besides the simulator's presets: GPU rigs and the plan's built-in builds."""
    from gpuadvisor.plan.build import builtin_names

    return sorted(GPU_RIGS) + [n for n in builtin_names() if not n.startswith("rent-")]


def _is_build_file(path: Path) -> bool:
    """A plan build file: compact (gpu and count, or a list of NxGPU and a cpu) or a rig description with a [plan]
    table."""
    if not path.is_file():
        return False
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8", errors="replace")[: 1 << 20])
    except tomllib.TOMLDecodeError:
        return False  # the simulator's loader says what is wrong with it
    gpu = data.get("gpu")
    return (isinstance(gpu, str) and "count" in data) or (isinstance(gpu, list) and "cpu" in data) or "plan" in data


def build_for(name_or_path: str) -> Any:
    """The plan build a `--simulate` argument names, or None when it names a simulator preset or rig file."""
    from gpuadvisor.plan.build import builtin_names, load_build, parse_build

    rig = GPU_RIGS.get(name_or_path.strip().lower())
    if isinstance(rig, dict):
        return parse_build(dict(rig), "", f"rig {name_or_path}")
    if isinstance(rig, str):
        return load_build(rig)
    if name_or_path in builtin_names():
        return load_build(name_or_path)
    if name_or_path.endswith(".toml") and _is_build_file(Path(name_or_path)):
        return load_build(name_or_path)
    return None


def simulate_any(name_or_path: str) -> Any:
    """The simulated Rig of a `--simulate` argument: a plan build through the plan's layout, else a preset."""
    b = build_for(name_or_path)
    if b is None:
        from gpuadvisor.collect import simulate

        try:
            return simulate(name_or_path)
        except InputError as e:
            if str(e).startswith("unknown preset"):
                raise InputError(f"{e}; or a GPU rig or plan build: {', '.join(rig_names())}") from None
            raise
    if b.rent:
        raise InputError(f"{name_or_path}: a rented build has no machine to simulate (no CPU or board named)")
    from gpuadvisor.collect import simulate_description
    from gpuadvisor.plan.rigspec import rig_description
    from gpuadvisor.probes.rigdesc import parse_description

    desc, layout = rig_description(b)
    if not layout.buildable:
        raise InputError(f"{name_or_path}: cannot be built: {'; '.join(layout.problems)}")
    rig = simulate_description(parse_description(desc, b.origin))
    rig.source.preset = b.name
    return rig
