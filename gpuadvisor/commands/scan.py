"""gpuadvisor scan: what this machine really is, what it does, what is wrong with it, how to train on it."""

from __future__ import annotations

from typing import Any

import click

from gpuadvisor.advisor.options import workload_kwargs, workload_options
from gpuadvisor.commands.common import get_rig, rig_source_options, use_color, verbose, write_json
from gpuadvisor.commands.options import (
    backend_option,
    budget_option,
    format_option,
    html_file_option,
    json_file_option,
    nproc_option,
    policy_option,
    redact_option,
    sweep_options,
)
from gpuadvisor.commands.storage import checkpoint_options, storage_options
from gpuadvisor.errors import InputError
from gpuadvisor.facts import Rig
from gpuadvisor.numbers import Finite


def _bench_progress() -> Any:
    from gpuadvisor.commands.bench import _progress

    return _progress()


@click.command()
@rig_source_options
@click.option(
    "--from-nvidia-smi",
    "nvidia_smi_dir",
    metavar="DIR",
    help="Build the scan from nvidia-smi / lspci / nccl-tests outputs saved in DIR (as gpuadvisor import).",
)
@click.option(
    "--bench", is_flag=True, help="Also measure: collectives, peer-to-peer and host<->device copies (needs torch)."
)
@sweep_options(
    "bench_preset", "With --bench: a few sizes (under a minute on 8 GPUs).", "With --bench: the full size sweep."
)
@backend_option("With --bench: nccl (GPUs, default when CUDA is there) or gloo (CPUs).")
@nproc_option("With --bench: processes for the collectives (default: one per GPU, or 2 on CPUs).")
@budget_option("With --bench: wall-clock budget; a hung worker is killed at it.")
@workload_options
@storage_options
@checkpoint_options
@policy_option(
    "Rule policy: select/ignore codes, severities, thresholds (see examples/policies/).",
    metavar="POLICY.toml",
    dest="policy",
)
@click.option(
    "--psu-watts",
    type=Finite(0, 100_000, min_open=True),
    metavar="W",
    help="The power supply's rating, for the PSU sizing rule (never probed).",
)
@click.option("--no-rules", is_flag=True, help="Only the facts: skip the findings.")
@redact_option("everything written or printed, partial saves included.")
@json_file_option("Save the scan as JSON (read it back with --from).")
@html_file_option("Write the self-contained HTML report.")
@format_option("text", "json")
def scan(
    from_: str | None,
    simulate_: str | None,
    import_torch: bool,
    sysfs_root: str,
    nvidia_smi_dir: str | None,
    bench: bool,
    bench_preset: str | None,
    backend: str | None,
    nproc: int | None,
    budget_s: float | None,
    policy: str | None,
    psu_watts: float | None,
    no_rules: bool,
    redact: bool,
    json_path: str | None,
    html_path: str | None,
    fmt: str,
    **kw: Any,
) -> None:
    """Probe this machine (or a preset, a saved scan, or saved nvidia-smi output) and report what it is.

    Every GPU (model, memory, bus id, compute capability, power, temperature, ECC and retired/remapped memory,
    clocks-event reasons, persistence, MIG, NUMA node, CPU affinity), the PCIe link of every GPU and of every
    hop to its CPU root port, NVLink, the topology matrix with P2P capability, the host and the software;
    then the findings (worst first, with evidence and a fix). --bench adds measured bandwidth, --model a
    parallelism strategy, --html a report to send to a colleague.

    \b
    Examples:
      gpuadvisor scan                               # this machine
      gpuadvisor scan --bench --model llama-3-8b --html report.html
      gpuadvisor scan --simulate dgx-h100 --model llama-3-70b --json s.json
      gpuadvisor scan --from s.json                 # a saved scan, on any machine
      gpuadvisor scan --from-nvidia-smi outputs/    # what a vendor sent you
    """
    from gpuadvisor.advisor import Workload
    from gpuadvisor.output import plan_outputs
    from gpuadvisor.render.text.rig import render_scan

    plan_outputs(
        {"--json": json_path, "--html": html_path},
        {
            "--from": from_,
            "--simulate": simulate_,
            "--policy": policy,
            "--from-nvidia-smi": nvidia_smi_dir,
            "--model": kw.get("model"),
            "--hf-config": kw.get("hf_config"),
        },
    )
    from gpuadvisor.commands.storage import attach_checkpoint, pop_storage_options, prepare

    store = pop_storage_options(kw)
    wkw = workload_kwargs(kw)
    workload = Workload.from_options(**wkw) if Workload.requested(**wkw) else None  # bad options fail before probing
    if nvidia_smi_dir:
        if from_ or simulate_:
            raise InputError("--from-nvidia-smi cannot be combined with --from or --simulate: choose one source")
        from pathlib import Path

        from gpuadvisor.importers import import_dir

        rig = import_dir(Path(nvidia_smi_dir))
    else:
        rig = get_rig(from_, simulate_, sysfs_root=sysfs_root, import_torch=import_torch or bench)
    if not nvidia_smi_dir:
        prepare(rig, store, sysfs_root)
    if bench:
        inputs = (from_, simulate_, nvidia_smi_dir, policy)
        _bench(rig, bench_preset, backend, nproc, budget_s, json_path, redact, inputs)
    if psu_watts is not None:
        rig.host.psu_watts = psu_watts
        rig.host.unavailable.pop("psu_watts", None)
    advice = None
    if workload is not None and not rig.gpus:
        rig.problems.append(
            "--model: no GPU in this scan, so no strategy (gpuadvisor advise --simulate PRESET --model ... plans one)"
        )
        click.echo(
            "gpuadvisor: no GPU found: no strategy to advise for --model (try gpuadvisor advise --simulate dgx-h100 "
            "--model ...)",
            err=True,
        )
        workload = None
    if workload is not None:
        from gpuadvisor.advisor import advise

        advice = advise(rig, workload)
        attach_checkpoint(rig, advice, store)
    if not no_rules:  # once, after the advisor: the storage rules judge the directories against its checkpoint
        from gpuadvisor.rules import evaluate

        evaluate(rig, policy)
    if redact:  # after the rules and the advisor (they judge the real facts), before anything is shown
        from gpuadvisor.redact import redact as redact_rig

        redact_rig(rig, inputs=(from_, simulate_, nvidia_smi_dir, policy)).walk(advice)
    if json_path:
        write_json(rig, json_path)
    if html_path:
        from gpuadvisor.render.html import write_html

        write_html(rig, html_path)
    if fmt == "json":
        click.echo(rig.to_json(), nl=False)
        return
    from gpuadvisor.render.text.rig import render_rest

    color = use_color()
    click.echo(render_scan(rig, color=color, verbose=verbose()), nl=False)
    click.echo(render_rest(rig, color=color, findings=not no_rules), nl=False)
    for path, what in ((json_path, "scan"), (html_path, "HTML report")):
        if path:
            click.echo(f"{what} written to {path}", err=True)


def _bench(
    rig: Rig,
    bench_preset: str | None,
    backend: str | None,
    nproc: int | None,
    budget_s: float | None,
    json_path: str | None,
    redact: bool,
    inputs: tuple[str | None, ...],
) -> None:
    """scan --bench: measure this machine into ``rig``; Ctrl-C or SIGTERM keeps what was measured in --json
    (redacted with --redact, ``inputs`` being the paths given) and stops as interrupted."""
    if rig.source.kind == "live" and not rig.gpus and backend != "gloo":
        # Nothing to measure on GPUs: say so now rather than after a CPU run, and still write what the scan has.
        rig.problems.append("--bench skipped: no GPU to benchmark (--bench --backend gloo measures CPU collectives)")
        click.echo(
            "gpuadvisor: no GPU found: nothing to benchmark on GPUs, --bench skipped "
            "(--bench --backend gloo measures CPU collectives)",
            err=True,
        )
        return
    if rig.source.kind != "live":
        raise InputError(
            f"--bench measures this machine, but the scan comes from a {rig.source.kind} source: drop --bench, or "
            "drop --from/--simulate"
        )
    import warnings

    from gpuadvisor.bench import run_benchmarks
    from gpuadvisor.bench.launcher import Interrupted

    try:
        with warnings.catch_warnings():  # torch without numpy warns on import; the benchmarks do not need it
            warnings.filterwarnings("ignore", message=".*NumPy.*")
            run_benchmarks(
                rig,
                preset=bench_preset or "default",
                backend=backend,
                nproc=nproc,
                budget_s=budget_s,
                progress=_bench_progress(),
            )
    except Interrupted as e:
        # Ctrl-C or SIGTERM: keep what was measured in the saved scan, then stop as interrupted.
        for m in e.measurements:
            if m not in rig.measurements:
                rig.measurements.append(m)
        rig.problems.append(f"benchmark interrupted ({e}): {len(e.measurements)} measurement(s) kept")
        if json_path:
            if redact:
                from gpuadvisor.redact import redact as redact_rig

                redact_rig(rig, inputs=inputs)
            write_json(rig, json_path)
            click.echo(f"interrupted: partial scan written to {json_path}", err=True)
        raise
