"""gpuadvisor bench: measure what this machine's links really move, next to what they should move."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import click

from gpuadvisor.commands.common import get_rig, write_json
from gpuadvisor.commands.options import (
    backend_option,
    budget_option,
    json_file_option,
    nproc_option,
    redact_option,
    sweep_options,
)
from gpuadvisor.errors import InputError
from gpuadvisor.numbers import Count, Finite
from gpuadvisor.text import plural


def _progress(stream: Any = None) -> Callable[[int, int, str], None]:
    """A bar redrawn in place on a terminal; one plain line per result otherwise (logs, CI)."""
    stream = stream or sys.stderr
    tty = bool(getattr(stream, "isatty", lambda: False)())
    start = time.time()
    state = {"last": ""}

    def show(done: int, total: int, label: str) -> None:
        if not label:
            return
        elapsed = time.time() - start
        if tty:
            width = 24
            filled = int(width * done / total) if total else 0
            line = f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {elapsed:5.0f}s  {label}"[:120]
            # The carriage return is ours (redraw the bar); the label goes through the sanitiser like all text.
            getattr(stream, "write_control", stream.write)("\r")
            stream.write(line[1:].ljust(len(state["last"])))
            state["last"] = line
            if done >= total:
                stream.write("\n")
                state["last"] = ""
        else:
            stream.write(f"bench: [{done}/{total}] {elapsed:.0f}s {label}\n")
        stream.flush()

    return show


def _size(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    if value is None:
        return None
    from gpuadvisor.bench.presets import parse_size

    if len(value) > 24:
        raise click.BadParameter(f"size {value[:24]!r}...: too long for a byte count (at most 1T)")
    try:
        size = parse_size(value)
    except InputError as e:
        raise click.BadParameter(str(e)) from None
    if size > 2**40:
        raise click.BadParameter(f"size {value!r}: more than 1 TiB; no GPU holds a buffer that large")
    return size


@click.command()
@backend_option("torch.distributed backend for the collectives [default: nccl if torch sees a CUDA GPU, else gloo].")
@nproc_option("Processes for the collectives, one per GPU [default: every GPU; 2 with gloo].")
@sweep_options(
    "preset",
    "1 MiB to 1 GiB, 5 iterations, short copy runs: under a minute on 8 GPUs.",
    "8 B to 8 GiB, 50 iterations, long copy runs.",
)
@budget_option(
    "Wall-clock budget of the whole run; hung workers are killed at its end "
    "[default: quick 55, default 300, full 1800]."
)
@click.option(
    "--only",
    metavar="KINDS",
    help="Comma-separated: all_reduce, all_gather, reduce_scatter, broadcast, h2d, d2h, d2d, p2p_unidir, "
    "p2p_bidir, p2p_latency, or the groups collectives, copies, p2p.",
)
@click.option(
    "-b", "--min-bytes", callback=_size, metavar="SIZE", help="First collective size, as nccl-tests -b (8, 64K, 1M)."
)
@click.option(
    "-e",
    "--max-bytes",
    callback=_size,
    metavar="SIZE",
    help="Last collective size, as nccl-tests -e (bounded by free memory).",
)
@click.option(
    "-n", "--iters", type=Count(1, 10**6), default=None, metavar="N", help="Timed iterations per size (nccl-tests -n)."
)
@click.option(
    "-w",
    "--warmup",
    type=Count(0, 10**6),
    default=None,
    metavar="N",
    help="Warm-up iterations per size (nccl-tests -w).",
)
@click.option(
    "--compute",
    is_flag=True,
    default=False,
    help="Measure dense matmul TFLOP/s (bf16, fp16, tf32, fp8 where supported; fp32 and bf16 on a CPU) and "
    "memory bandwidth, against the datasheet peak; alone unless --only names more [--full includes it].",
)
@click.option(
    "--interface",
    metavar="IFNAME",
    help="Multi-node runs (torchrun/Slurm): the network interface gloo and NCCL bind (sets GLOO_SOCKET_IFNAME "
    "and NCCL_SOCKET_IFNAME). Local runs listen on loopback only.",
)
@click.option(
    "--from",
    "from_",
    metavar="SCAN.json",
    help="Judge the results against the facts of a saved scan of this machine instead of probing it.",
)
@json_file_option("Save the scan (this machine's facts + the measurements) as JSON.")
@click.option(
    "--pairs",
    is_flag=True,
    help="Multi-node job only: also all-reduce between every two nodes, in rounds of "
    "disjoint pairs, to find a slow link or NIC (gpuadvisor fleet reads them).",
)
@redact_option("the saved scan and the printed results, interrupted runs included.")
@click.option(
    "--storage",
    "storage_dir",
    metavar="DIR",
    help="Measure the directory's filesystem instead: sequential write/read GB/s and 4 KiB random-read IOPS "
    "(fio when installed, O_DIRECT where allowed); writes one test file in DIR and removes it.",
)
@click.option("--storage-size", callback=_size, metavar="SIZE", help="--storage: test file size [default: 256M].")
@click.option(
    "--storage-seconds",
    type=Finite(0, 600, min_open=True),
    default=None,
    metavar="S",
    help="--storage: time limit of each of the three tests [default: 2].",
)
@click.option(
    "--storage-engine",
    type=click.Choice(["auto", "fio", "python"]),
    default="auto",
    show_default=True,
    help="--storage: fio (when installed) or the built-in Python loops.",
)
def bench(
    backend: str | None,
    nproc: int | None,
    preset: str | None,
    budget_s: float | None,
    only: str | None,
    min_bytes: int | None,
    max_bytes: int | None,
    iters: int | None,
    warmup: int | None,
    compute: bool,
    interface: str | None,
    from_: str | None,
    json_path: str | None,
    pairs: bool = False,
    redact: bool = False,
    storage_dir: str | None = None,
    storage_size: int | None = None,
    storage_seconds: float | None = None,
    storage_engine: str = "auto",
) -> None:
    """Measure collectives, peer-to-peer and host<->device bandwidth; with --compute, matmul TFLOP/s.

    Collectives (all_reduce, all_gather, reduce_scatter, broadcast) run through torch.distributed, one
    process per GPU with NCCL (CUDA events) or per --nproc with gloo on CPUs (perf_counter), over a doubling
    size sweep. Each size prints in nccl-tests' columns: time (the timed loop's total / iterations after a
    barrier, as nccl-tests defines it, of the slowest rank), algbw = S/t, busbw = algbw × 2(n-1)/n, (n-1)/n
    or 1, and #wrong from a correctness check (a wrong result fails the measurement).
    On CUDA it also measures host<->device copies per GPU (pinned and pageable, alone and all at once),
    copies within a GPU, and a peer-to-peer matrix with P2P on and off, as nvbandwidth and
    p2pBandwidthLatencyTest do. Each figure is shown against what the rig's links should give.

    Inside torchrun or Slurm (RANK, WORLD_SIZE, MASTER_ADDR set) each process joins that job, so a
    multi-node run measures the network too; rank 0 prints and saves the results. A local run opens no
    port beyond loopback; a joined run listens on MASTER_ADDR:MASTER_PORT (rank 0) and on the interface
    named with --interface.

    --compute measures each GPU's dense matmul TFLOP/s (8192³ and a transformer MLP shape, CUDA events,
    median of runs, 2·M·N·K FLOPs per product) and its memory copy bandwidth, against the datasheet
    dense peak; on a machine without a GPU the same runs on the CPU (not judged against a peak).

    Exit status: 0 all measured; 1 a measurement failed or timed out (the output is still written);
    2 bad options or no torch; 130 Ctrl-C, 143 SIGTERM (the workers are killed; what was measured before
    is still printed and saved).

    \b
    Examples:
      gpuadvisor bench --quick
      gpuadvisor bench --compute
      gpuadvisor bench --backend gloo --nproc 2 --only all_reduce -e 16M
      gpuadvisor bench --json scan.json   # then gpuadvisor scan --from scan.json
      gpuadvisor bench --storage /data    # the data's filesystem (fio if there)
      torchrun --nnodes 2 --nproc-per-node 8 --rdzv-endpoint HOST:29400 \\
        -m gpuadvisor bench --only collectives
    """
    from gpuadvisor.output import plan_outputs

    plan_outputs({"--json": json_path}, {"--from": from_})
    if storage_dir is not None:
        from gpuadvisor.commands.storage import bench_storage

        bench_storage(storage_dir, storage_size, storage_seconds, storage_engine, json_path, from_)
        return
    from gpuadvisor.bench import run_benchmarks
    from gpuadvisor.bench.presets import get_preset
    from gpuadvisor.render.text.bench import render_measurements

    p = get_preset(preset or "default").with_overrides(
        min_bytes=min_bytes, max_bytes=max_bytes, iters=iters, warmup_iters=warmup
    )
    import warnings

    from gpuadvisor.bench.launcher import Interrupted, join_env

    with warnings.catch_warnings():  # torch without numpy warns on import; nothing here needs numpy
        warnings.filterwarnings("ignore", message=".*NumPy.*")
        rig = get_rig(from_, None, import_torch=True)
    stopped: Interrupted | None = None
    try:
        measurements = run_benchmarks(
            rig,
            preset=p,
            backend=backend,
            nproc=nproc,
            budget_s=budget_s,
            only=only if (only or not compute) else "compute",
            compute=compute,
            interface=interface,
            progress=_progress(),
            pairs=pairs,
        )
    except Interrupted as e:  # Ctrl-C or SIGTERM: the workers are gone; show and save what was measured
        stopped, measurements = e, e.measurements
        click.echo("", err=True)
    job = join_env()
    if job is not None and job["RANK"] != "0":
        click.echo(
            f"gpuadvisor bench: rank {job['RANK']} {'interrupted' if stopped else 'done'}; rank 0 reports the results",
            err=True,
        )
        if stopped:
            raise click.exceptions.Exit(128 + stopped.signum)
        return
    if redact:  # also when interrupted: what is saved and printed then is redacted the same way
        from gpuadvisor.redact import redact as redact_rig

        redact_rig(rig, inputs=(from_,)).walk(measurements)
    if json_path:
        write_json(rig, json_path)
    click.echo(render_measurements(measurements), nl=False)
    if json_path:
        click.echo(f"scan with {plural(len(measurements), 'measurement')} saved to {json_path}", err=True)
    if stopped:
        click.echo(
            f"gpuadvisor bench: interrupted by {stopped}; the results above are those measured before it", err=True
        )
        raise click.exceptions.Exit(128 + stopped.signum)
    bad = [m for m in measurements if m.status in ("failed", "timeout")]
    if bad:
        raise click.exceptions.Exit(1)
