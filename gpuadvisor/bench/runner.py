"""``run_benchmarks``: the one entry point ``gpuadvisor bench`` and ``gpuadvisor scan --bench`` call."""

from __future__ import annotations

import signal
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from gpuadvisor.bench.formulas import COLLECTIVES, doubling_sizes
from gpuadvisor.bench.launcher import KILL_GRACE_S, Interrupted, join_env, supervise
from gpuadvisor.bench.presets import PRESETS, Preset, get_preset
from gpuadvisor.bench.results import Collector
from gpuadvisor.errors import InputError
from gpuadvisor.facts import Measurement, Rig
from gpuadvisor.text import plural

COPY_KINDS: tuple[str, ...] = ("h2d", "d2h", "d2d", "p2p_unidir", "p2p_bidir", "p2p_latency")
ALL_KINDS: tuple[str, ...] = COLLECTIVES + COPY_KINDS
COMPUTE_KINDS: tuple[str, ...] = ("matmul", "memory_bandwidth")  # bench --compute; in --full; not in "all"
KNOWN_KINDS: tuple[str, ...] = ALL_KINDS + COMPUTE_KINDS
ALIASES: dict[str, tuple[str, ...]] = {
    "compute": COMPUTE_KINDS,
    "all": ALL_KINDS,
    "collectives": COLLECTIVES,
    "copies": ("h2d", "d2h", "d2d"),
    "p2p": ("p2p_unidir", "p2p_bidir", "p2p_latency"),
}
BACKENDS = ("nccl", "gloo")
PHASE_MARGIN_S = KILL_GRACE_S + 0.5  # kept back from a phase so killing its workers ends within the budget
COLLECTIVE_SHARE = 0.55  # of the budget, when copy benchmarks follow the collectives
COMPUTE_SHARE = 0.2  # of the budget kept for the compute phase (last) when other benchmarks run before it


# The quick and default sweeps' end for gloo processes on this machine (see run_benchmarks).
GLOO_LOCAL_MAX_BYTES = 64 * 2**20

# What works from a clone (the package is not on a public index): torch into this Python first, then the extra.
TORCH_MISSING = (
    "the benchmarks need torch: install it into this Python (on a GPU machine: python -m pip install torch; "
    "without GPUs: python -m pip install --index-url https://download.pytorch.org/whl/cpu torch), then, in the "
    "gpuadvisor clone, python -m pip install -e '.[bench]' (make setup does both)"
)


def parse_only(only: str | Iterable[str] | None) -> list[str]:
    """Kinds to run, in the canonical order; ``None`` means all. Accepts "a,b" or a list; aliases allowed."""
    if only is None:
        return list(ALL_KINDS)
    items = only.split(",") if isinstance(only, str) else list(only)
    want: set[str] = set()
    for raw in items:
        item = raw.strip().lower().replace("-", "_")
        if not item:
            continue
        if item in ALIASES:
            want.update(ALIASES[item])
        elif item in KNOWN_KINDS:
            want.add(item)
        else:
            raise InputError(
                f"--only: unknown benchmark {raw.strip()!r} (known: {', '.join((*KNOWN_KINDS, *ALIASES))})"
            )
    if not want:
        raise InputError("--only: no benchmark named (give e.g. all_reduce,h2d)")
    return [k for k in KNOWN_KINDS if k in want]


def _torch_cuda() -> tuple[bool, int]:
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch warns when numpy is missing; the benchmarks do not need it
            import torch
    except ImportError:
        raise InputError(TORCH_MISSING) from None
    except (OSError, RuntimeError) as e:  # installed but broken: a CUDA library missing or mismatched
        first = (str(e).splitlines() or [""])[0][:200]
        raise InputError(
            f"torch is installed but fails to import ({e.__class__.__name__}: {first}): check that its "
            "CUDA build matches this machine's libraries, or reinstall it"
        ) from None
    ok = bool(torch.cuda.is_available())
    return ok, (torch.cuda.device_count() if ok else 0)


def run_benchmarks(
    rig: Rig,
    *,
    preset: str | Preset = "default",
    backend: str | None = None,
    nproc: int | None = None,
    budget_s: float | None = None,
    only: str | Iterable[str] | None = None,
    progress: Callable[[int, int, str], None] | None = None,
    pairs: bool = False,
    compute: bool = False,
    interface: str | None = None,
) -> list[Measurement]:
    """Measure collectives (and, on CUDA, copies) on this machine; return the Measurements.

    They are also appended to ``rig.measurements`` and ``rig.provenance["measurements"]`` becomes "measured".
    ``preset`` is "quick", "default", "full" or a ``Preset``; ``backend`` "nccl" or "gloo" (default: nccl when
    torch sees a CUDA GPU); ``nproc`` processes for the collectives (default: every GPU, or 2 on CPUs);
    ``budget_s`` the wall-clock budget of the whole run (default: the preset's); ``only`` the kinds to run;
    ``progress(done, total, label)`` is called as results arrive. ``compute`` adds the compute measurements
    (dense matmul TFLOP/s per dtype and shape, memory bandwidth; on the CPU where torch sees no GPU); the full
    preset includes them when ``only`` is None, ``only="compute"`` runs just them. ``interface`` names the
    network interface a multi-node run binds (local runs bind loopback only). When RANK, WORLD_SIZE and MASTER_ADDR are
    set
    (torchrun, Slurm) this process joins that job as its rank; only rank 0 returns measurements.
    Failures do not raise: a hung or dead worker becomes a Measurement with status "timeout" or "failed",
    keeping the sizes measured before it. Bad arguments raise ``InputError``. Ctrl-C or SIGTERM kills the
    workers and raises ``gpuadvisor.bench.launcher.Interrupted`` (a KeyboardInterrupt) once what was measured
    before it is in ``rig.measurements`` (status "partial", or "skipped" when nothing was) and in its
    ``measurements``.
    """
    p = get_preset(preset)
    if budget_s is not None:
        p = p.with_overrides(budget_s=float(budget_s))
    budget = p.budget_s
    kinds = parse_only(only)
    explicit = only is not None
    if compute or (only is None and p.name == "full"):
        kinds += [k for k in COMPUTE_KINDS if k not in kinds]
    has_cuda, ndev = _torch_cuda()
    backend = (backend or ("nccl" if has_cuda else "gloo")).lower()
    if backend not in BACKENDS:
        raise InputError(f"--backend: unknown backend {backend!r} (known: {', '.join(BACKENDS)})")
    if backend == "nccl" and not has_cuda:
        raise InputError("--backend nccl needs a CUDA GPU and torch sees none (use --backend gloo to run on CPUs)")
    join = join_env()
    if join is not None:
        world = int(join["WORLD_SIZE"])
        if nproc is not None and nproc != world:
            raise InputError(f"--nproc {nproc} conflicts with WORLD_SIZE={world} of the job this process joins")
        nproc = world
    elif backend == "nccl":
        nproc = ndev if nproc is None else nproc
        if nproc > ndev:
            raise InputError(
                f"--nproc {nproc}: only {plural(ndev, 'CUDA GPU')} visible (NCCL runs one process per GPU)"
            )
    else:
        nproc = 2 if nproc is None else nproc
    if nproc < 1:
        raise InputError(f"--nproc must be at least 1, got {nproc}")
    if interface is not None:
        if join is None:
            raise InputError(
                "--interface applies to a multi-node run (inside torchrun or Slurm): a local run binds loopback only"
            )
        _check_interface(interface)
    rank0 = join is None or join["RANK"] == "0"
    if pairs and join is None:
        raise InputError("--pairs measures node pairs of a multi-node job: run it under torchrun or srun across nodes")
    cap_note = None
    if (
        backend == "gloo"
        and join is None
        and p.name in ("quick", "default")
        and p.max_bytes == PRESETS[p.name].max_bytes > GLOO_LOCAL_MAX_BYTES
    ):
        # Local gloo processes share this machine's memory bus: past tens of MiB the sweep only measures
        # memcpy, and a 1 GiB all_gather on a 2-core box outlasts the budget. --full or -e go further.
        p = p.with_overrides(max_bytes=GLOO_LOCAL_MAX_BYTES)
        cap_note = (
            f"gloo on local CPUs: sweep capped at {GLOO_LOCAL_MAX_BYTES // 2**20} MiB (use -e SIZE or --full for more)"
        )

    coll = [k for k in kinds if k in COLLECTIVES]
    copy_kinds = [k for k in kinds if k in COPY_KINDS]
    run_copies = bool(copy_kinds) and has_cuda and join is None
    compute_kinds = [k for k in kinds if k in COMPUTE_KINDS]
    run_compute = bool(compute_kinds) and join is None
    collector = Collector(rig, progress)
    out: list[Measurement] = []
    signum: int | None = None  # set when Ctrl-C or SIGTERM stopped a phase
    t0 = time.time()
    end = t0 + budget
    # the phases before the compute one end here: compute keeps COMPUTE_SHARE of the budget when it follows others
    span_end = end - (COMPUTE_SHARE * budget if run_compute and (coll or run_copies) else 0.0)
    with tempfile.TemporaryDirectory(prefix="gpuadvisor-bench-") as tmp:
        work = Path(tmp)
        if coll:
            hard = t0 + (COLLECTIVE_SHARE if run_copies else 1.0) * (span_end - t0) - PHASE_MARGIN_S
            soft = hard - max(1.0, 0.1 * (hard - time.time()))
            cfg = {
                "backend": backend,
                "kinds": coll,
                "min_bytes": p.min_bytes,
                "max_bytes": p.max_bytes,
                "warmup_iters": p.warmup_iters,
                "iters": p.iters,
                "soft_deadline": soft,
                "pg_timeout_s": 2 * budget + 60,
                "local_procs": nproc if join is None else None,
                "pairs": pairs,
            }
            collector.plan_collectives(coll, len(doubling_sizes(p.min_bytes, p.max_bytes)))
            res = supervise(
                "collectives",
                cfg,
                work,
                nproc=nproc,
                hard_deadline=hard,
                join=join,
                on_events=collector.feed,
                interface=interface,
            )
            signum = res.signum
            if rank0:
                keys = [k for k in collector.order if k in coll or k.startswith("pair ")]
                out += [collector.measurement(k, res.status, res.error) for k in keys]
                for k in coll:
                    if k not in collector.begin:
                        why = res.error if res.status != "ok" else "the worker ended before reaching it"
                        out.append(
                            Measurement(
                                kind=k,
                                backend=backend,
                                world_size=nproc,
                                status=_unstarted(res.status),
                                error=f"not measured: {why}",
                            )
                        )
        if signum is not None:
            if run_copies:
                out += [
                    Measurement(
                        kind=k,
                        backend="cuda",
                        status="skipped",
                        error=f"not measured: interrupted by {signal.Signals(signum).name} before the copies",
                    )
                    for k in copy_kinds
                ]
        elif run_copies:
            hard = span_end - PHASE_MARGIN_S
            soft = hard - max(1.0, 0.1 * (hard - time.time()))
            cfg = {
                "kinds": copy_kinds,
                "copy_bytes": p.copy_bytes,
                "copies_per_run": p.copies_per_run,
                "copy_runs": p.copy_runs,
                "latency_reps": p.latency_reps,
                "p2p_off": p.p2p_off,
                "soft_deadline": soft,
            }
            before = set(collector.order)
            res = supervise("copies", cfg, work, nproc=1, hard_deadline=hard, on_events=collector.feed)
            signum = res.signum
            keys = [k for k in collector.order if k not in before]
            out += [collector.measurement(k, res.status, res.error) for k in keys]
            if not keys:
                why = res.error or "the copy worker ended without a result"
                out += [
                    Measurement(kind=k, backend="cuda", status=_unstarted(res.status), error=f"not measured: {why}")
                    for k in copy_kinds
                ]
        elif copy_kinds and explicit and rank0:
            why = (
                "copies are measured in a local run, not when joining a torchrun/Slurm job"
                if join is not None
                else "copies need a CUDA GPU and torch sees none"
            )
            out += [Measurement(kind=k, backend="cuda", status="skipped", error=why) for k in copy_kinds]
        if compute_kinds and rank0:
            if not run_compute:
                out += [
                    Measurement(
                        kind=k,
                        backend="cuda" if has_cuda else "cpu",
                        status="skipped",
                        error="compute is measured in a local run, not when joining a torchrun/Slurm job",
                    )
                    for k in compute_kinds
                ]
            elif signum is not None:
                out += [
                    Measurement(
                        kind=k,
                        backend="cuda" if has_cuda else "cpu",
                        status="skipped",
                        error=f"not measured: interrupted by {signal.Signals(signum).name} before it",
                    )
                    for k in compute_kinds
                ]
            else:
                res_c = _run_compute(rig, work, compute_kinds, has_cuda, end, collector)
                signum = res_c[1]
                out += res_c[0]
    if cap_note:
        for m in out:
            if m.kind in COLLECTIVES:
                m.notes.append(cap_note)
    if out:
        rig.measurements.extend(out)
        rig.provenance["measurements"] = "measured"
    if signum is not None:
        raise Interrupted(signum, out)
    return out


def _check_interface(name: str) -> None:
    try:
        import psutil

        names = set(psutil.net_if_addrs())
    except (ImportError, OSError):
        return
    if name not in names:
        raise InputError(f"--interface {name!r}: no such network interface here (have: {', '.join(sorted(names))})")


def _run_compute(
    rig: Rig, work: Path, kinds: list[str], has_cuda: bool, end: float, collector: Collector
) -> tuple[list[Measurement], int | None]:
    """The compute phase: one worker measures every GPU in turn (or the CPU), until ``end``."""
    from gpuadvisor.bench import compute_results

    hard = end - PHASE_MARGIN_S
    soft = hard - max(1.0, 0.1 * (hard - time.time()))
    backend = "cuda" if has_cuda else "cpu"
    cfg = {"kinds": kinds, "backend": backend, "soft_deadline": soft}
    res = supervise("compute", cfg, work, nproc=1, hard_deadline=hard, on_events=collector.feed)
    ms = compute_results.measurements(rig, res.events)
    if res.status != "ok":
        why = res.error or "the compute worker ended early"
        if not ms:
            ms = [
                Measurement(kind=k, backend=backend, status=_unstarted(res.status), error=f"not measured: {why}")
                for k in kinds
            ]
        else:
            ms.append(
                Measurement(
                    kind=ms[-1].kind if len(kinds) == 1 else "matmul",
                    backend=backend,
                    status=_unstarted(res.status),
                    error=f"compute stopped after {len(ms)} figure(s): {why}",
                )
            )
    return ms, res.signum


def _unstarted(outcome_status: str) -> str:
    """The status of a measurement its worker never began: the run's, "failed" if the run ended normally."""
    return {"ok": "failed", "interrupted": "skipped"}.get(outcome_status, outcome_status)
