"""The storage options and steps shared by scan, advise and bench: which directories, probing, bench --storage."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

import click

from gpuadvisor.advice_model import Advice
from gpuadvisor.facts import Rig, Storage

F = TypeVar("F", bound=Callable[..., Any])


def storage_options(f: F) -> F:
    """--data-dir and --checkpoint-dir (each optional; the working directory stands in when both are absent)."""
    f = click.option(
        "--checkpoint-dir",
        metavar="DIR",
        help="Where checkpoints are written: its filesystem, drives and free space are judged.",
    )(f)
    f = click.option(
        "--data-dir", metavar="DIR", help="Where the dataset is read from: its filesystem and drives are judged."
    )(f)
    return f


def storage_paths(data_dir: str | None, checkpoint_dir: str | None) -> list[tuple[str, str]]:
    paths = [(p, role) for p, role in ((data_dir, "data"), (checkpoint_dir, "checkpoint")) if p]
    return paths or [(os.getcwd(), "working")]


def probe_into(rig: Rig, data_dir: str | None, checkpoint_dir: str | None, sysfs_root: str = "/") -> None:
    """Fill ``rig.storage`` from this machine (live sources only; a saved scan keeps what it has)."""
    from gpuadvisor.errors import InputError
    from gpuadvisor.probes.storage import probe_storage

    for p, role in storage_paths(data_dir, checkpoint_dir):
        if not os.path.isdir(p):
            opt = "--data-dir" if role == "data" else "--checkpoint-dir"
            raise InputError(f"{opt} {p}: no such directory (give an existing directory)")
    rig.storage = probe_storage(storage_paths(data_dir, checkpoint_dir), root=sysfs_root)
    rig.provenance["storage"] = "read"


def bench_storage(
    directory: str, size: int | None, seconds: float | None, engine: str, json_path: str | None, from_: str | None
) -> None:
    """gpuadvisor bench --storage DIR: measure, print, and with --json save the scan with the figures."""
    from gpuadvisor.bench.storage import DEFAULT_FILE_BYTES, DEFAULT_SECONDS, render, run_storage_bench
    from gpuadvisor.commands.common import get_rig, write_json

    bench = run_storage_bench(
        directory, file_bytes=size or DEFAULT_FILE_BYTES, seconds=seconds or DEFAULT_SECONDS, engine=engine
    )
    real = os.path.realpath(directory)
    click.echo(render(real, bench), nl=False)
    if json_path:
        from gpuadvisor.probes.storage import probe_storage

        rig = get_rig(from_, None)
        if not any(p.path == real for p in rig.storage.paths):
            live = rig.source.kind == "live" or not rig.storage.paths
            probed = probe_storage([(real, "data")]) if live else Storage()
            if rig.storage.paths:
                rig.storage.paths += probed.paths
            else:
                rig.storage = probed
        for sp in rig.storage.paths:
            if sp.path == real:
                sp.bench = bench
        rig.provenance["storage"] = "measured"
        write_json(rig, json_path)
        click.echo(f"scan with the storage figures saved to {json_path}", err=True)


def checkpoint_options(f: F) -> F:
    """--checkpoint-every and --sample-bytes: what the checkpoint and data-loader advice needs."""
    f = click.option(
        "--sample-bytes",
        type=click.IntRange(1, 2**40),
        metavar="BYTES",
        help="Bytes per training sample (images, video): the data loader's read rate is samples/s x this "
        "[default: text, tokens/s x bytes per token].",
    )(f)
    f = click.option(
        "--checkpoint-every",
        metavar="INTERVAL",
        help="How often a checkpoint is saved: 30m, 2h, 900s or 500steps [default: assumed hourly]; the "
        "advice gives the save time and its share of training time.",
    )(f)
    return f


def pop_storage_options(kw: dict[str, Any]) -> dict[str, Any]:
    """Take this module's options out of a command's ``**kw`` (the rest are the workload's)."""
    return {k: kw.pop(k, None) for k in ("data_dir", "checkpoint_dir", "checkpoint_every", "sample_bytes")}


def prepare(rig: Rig, opts: dict[str, Any], sysfs_root: str = "/") -> None:
    """Probe the named directories on a live rig; refuse them for a saved or simulated one."""
    from gpuadvisor.errors import InputError

    if rig.source.kind == "live":
        probe_into(rig, opts.get("data_dir"), opts.get("checkpoint_dir"), sysfs_root)
    elif opts.get("data_dir") or opts.get("checkpoint_dir"):
        raise InputError(
            f"--data-dir/--checkpoint-dir probe this machine, but the rig comes from a {rig.source.kind} "
            "source: drop them, or run on the machine itself"
        )
    elif rig.source.kind != "saved" and not rig.storage.paths and not rig.storage.unavailable:
        why = f"not probed: a {rig.source.kind} rig has no filesystems (scan the machine itself)"
        for name in ("page_cache_bytes", "memory_available_bytes"):
            rig.storage.missing(name, why)


def attach_checkpoint(rig: Rig, advice: Advice | None, opts: dict[str, Any]) -> Any:
    """The checkpoint plan for a training pick, stored in ``advice.checkpoint`` (the advice rig.advice holds); or
    None."""
    if not advice:
        return None
    from gpuadvisor.advisor.checkpoint import plan_checkpoint

    plan = plan_checkpoint(rig, advice, opts.get("checkpoint_every"), opts.get("sample_bytes"))
    if plan is not None:
        advice.checkpoint = plan
    return plan
