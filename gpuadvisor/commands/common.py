"""What several commands share: where the rig comes from, and colour."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from gpuadvisor import completion
from gpuadvisor.errors import InputError
from gpuadvisor.facts import Rig

F = TypeVar("F", bound=Callable[..., Any])


def rig_source_options(f: F) -> F:
    """--from FILE | --simulate PRESET (default: probe this machine)."""
    f = click.option("--sysfs-root", default="/", hidden=True, help="Read sysfs below this directory (tests).")(f)
    f = click.option(
        "--torch", "import_torch", is_flag=True, help="Import torch to read its exact CUDA and NCCL versions (slower)."
    )(f)
    f = click.option(
        "--simulate",
        "simulate_",
        metavar="PRESET|FILE.toml",
        shell_complete=completion.presets,
        help="Use a simulated rig: a preset name (gpuadvisor presets) or a rig description file.",
    )(f)
    f = click.option("--from", "from_", metavar="SCAN.json", help="Read a saved scan instead of probing.")(f)
    return f


def get_rig(from_: str | None, simulate_: str | None, *, sysfs_root: str = "/", import_torch: bool = False) -> Rig:
    if from_ and simulate_:
        raise InputError("--from and --simulate both given: choose one source")
    if from_:
        from gpuadvisor.facts import load

        return load(from_)
    if simulate_:
        from gpuadvisor.plan.simulate import simulate_any

        return simulate_any(simulate_)
    from gpuadvisor.collect import collect_live

    return collect_live(sysfs_root=sysfs_root, import_torch=import_torch)


def use_color(stream: Any = None) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set (https://no-color.org)."""
    stream = stream or sys.stdout
    if os.environ.get("NO_COLOR"):
        return False
    return bool(getattr(stream, "isatty", lambda: False)())


def write_json(rig: Rig, path: str) -> None:
    """Save the scan atomically (gpuadvisor.output.write_atomic); a failure is one line, the old file kept."""
    rig.save(path)


def verbose() -> bool:
    """The global -v/--verbose flag (gpuadvisor -v COMMAND): more detail in the text output."""
    ctx = click.get_current_context(silent=True)
    obj = ctx.find_root().obj if ctx is not None else None
    return bool(obj.get("verbose")) if isinstance(obj, dict) else False
