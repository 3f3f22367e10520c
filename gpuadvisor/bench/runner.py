"""``run_benchmarks``: the one entry point ``gpuadvisor bench`` and ``gpuadvisor scan --bench`` call."""

from __future__ import annotations

import signal
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from gpuadvisor.bench.formulas import COLLECTIVES, doubling_sizes
from gpuadvisor.bench.launcher import KILL_GRACE_S, Interrupted, join_env, supervise
from gpuadvisor.bench.presets import PRESETS, Preset, get_preset
from gpuadvisor.bench.results import Collector
from gpuadvisor.errors import InputError
from gpuadvisor.facts import COMPUTE, COPIES, P2P, Measurement, Rig
from gpuadvisor.text import plural

COPY_KINDS: tuple[str, ...] = (*COPIES, *P2P)
ALL_KINDS: tuple[str, ...] = COLLECTIVES + COPY_KINDS
COMPUTE_KINDS: tuple[str, ...] = COMPUTE  # bench --compute; in --full; not in "all"
KNOWN_KINDS: tuple[str, ...] = ALL_KINDS + COMPUTE_KINDS
ALIASES: dict[str, tuple[str, ...]] = {
    "compute": COMPUTE_KINDS,
    "all": ALL_KINDS,
    "collectives": COLLECTIVES,
    "copies": COPIES,
    "p2p": P2P,
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


@dataclass
class _RunPlan:
    """What one run does, decided before any worker starts: the sweep, the kinds per phase, where it runs."""

    preset: Preset
    backend: str
    nproc: int
    join: dict[str, str] | None
    has_cuda: bool
    explicit: bool  # the kinds were named (--only)
    pairs: bool
    interface: str | None
    kinds: list[str]
    cap_note: str | None = None  # a note for every collective when the local gloo sweep was capped

    @property
    def collectives(self) -> list[str]:
        return [k for k in self.kinds if k in COLLECTIVES]

    @property
    def copy_kinds(self) -> list[str]:
        return [k for k in self.kinds if k in COPY_KINDS]

    @property
    def compute_kinds(self) -> list[str]:
        return [k for k in self.kinds if k in COMPUTE_KINDS]

    @property
    def rank0(self) -> bool:
        return self.join is None or self.join["RANK"] == "0"

    @property
    def run_copies(self) -> bool:
        return bool(self.copy_kinds) and self.has_cuda and self.join is None

    @property
    def run_compute(self) -> bool:
        return bool(self.compute_kinds) and self.join is None

    @property
    def compute_backend(self) -> str:
        return "cuda" if self.has_cuda else "cpu"


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

    The run is in phases: plan it (``_plan_run``: every argument checked before a worker starts), the
    collectives, the copies, the compute (each ``_*_phase`` launches its worker and collects its
    Measurements, or says why it did not run), then attach the results to the rig (``_attach``).
    """
    plan = _plan_run(preset, backend, nproc, budget_s, only, pairs, compute, interface)
    collector = Collector(rig, progress)
    out: list[Measurement] = []
    budget = plan.preset.budget_s
    t0 = time.time()
    end = t0 + budget
    # the phases before the compute one end here: compute keeps COMPUTE_SHARE of the budget when it follows others
    span_end = end - (COMPUTE_SHARE * budget if plan.run_compute and (plan.collectives or plan.run_copies) else 0.0)
    with tempfile.TemporaryDirectory(prefix="gpuadvisor-bench-") as tmp:
        work = Path(tmp)
        signum = _collectives_phase(plan, work, t0, span_end, collector, out)
        signum = _copies_phase(plan, work, span_end, collector, out, signum)
        signum = _compute_phase(plan, rig, work, end, collector, out, signum)
    _attach(rig, out, plan.cap_note)
    if signum is not None:
        raise Interrupted(signum, out)
    return out


def _plan_run(
    preset: str | Preset,
    backend: str | None,
    nproc: int | None,
    budget_s: float | None,
    only: str | Iterable[str] | None,
    pairs: bool,
    compute: bool,
    interface: str | None,
) -> _RunPlan:
    """Check the arguments (raising ``InputError``) and decide the run: preset, kinds, backend, processes."""
    p = get_preset(preset)
    if budget_s is not None:
        p = p.with_overrides(budget_s=float(budget_s))
    kinds = parse_only(only)
    if compute or (only is None and p.name == "full"):
        kinds += [k for k in COMPUTE_KINDS if k not in kinds]
    has_cuda, ndev = _torch_cuda()
    backend = _choose_backend(backend, has_cuda)
    join = join_env()
    nproc = _choose_nproc(nproc, backend, ndev, join)
    _check_joined_options(join, interface, pairs)
    plan = _RunPlan(p, backend, nproc, join, has_cuda, only is not None, pairs, interface, kinds)
    _cap_local_gloo(plan)
    return plan


def _choose_backend(backend: str | None, has_cuda: bool) -> str:
    backend = (backend or ("nccl" if has_cuda else "gloo")).lower()
    if backend not in BACKENDS:
        raise InputError(f"--backend: unknown backend {backend!r} (known: {', '.join(BACKENDS)})")
    if backend == "nccl" and not has_cuda:
        raise InputError("--backend nccl needs a CUDA GPU and torch sees none (use --backend gloo to run on CPUs)")
    return backend


def _choose_nproc(nproc: int | None, backend: str, ndev: int, join: dict[str, str] | None) -> int:
    """The collectives' processes: the joined job's world, every GPU for NCCL, else 2 (or as asked)."""
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
    return nproc


def _check_joined_options(join: dict[str, str] | None, interface: str | None, pairs: bool) -> None:
    """--interface and --pairs belong to a multi-node job (torchrun, Slurm)."""
    if interface is not None:
        if join is None:
            raise InputError(
                "--interface applies to a multi-node run (inside torchrun or Slurm): a local run binds loopback only"
            )
        _check_interface(interface)
    if pairs and join is None:
        raise InputError("--pairs measures node pairs of a multi-node job: run it under torchrun or srun across nodes")


def _cap_local_gloo(plan: _RunPlan) -> None:
    p = plan.preset
    if (
        plan.backend == "gloo"
        and plan.join is None
        and p.name in ("quick", "default")
        and p.max_bytes == PRESETS[p.name].max_bytes > GLOO_LOCAL_MAX_BYTES
    ):
        # Local gloo processes share this machine's memory bus: past tens of MiB the sweep only measures
        # memcpy, and a 1 GiB all_gather on a 2-core box outlasts the budget. --full or -e go further.
        plan.preset = p.with_overrides(max_bytes=GLOO_LOCAL_MAX_BYTES)
        plan.cap_note = (
            f"gloo on local CPUs: sweep capped at {GLOO_LOCAL_MAX_BYTES // 2**20} MiB (use -e SIZE or --full for more)"
        )


def _soft_deadline(hard: float) -> float:
    """When a worker stops starting new sizes: a tenth of what is left before ``hard`` (at least a second)."""
    return hard - max(1.0, 0.1 * (hard - time.time()))


def _collectives_phase(
    plan: _RunPlan, work: Path, t0: float, span_end: float, collector: Collector, out: list[Measurement]
) -> int | None:
    """Launch the collectives' processes (or join the job's); add rank 0's Measurements to ``out``."""
    coll = plan.collectives
    if not coll:
        return None
    p = plan.preset
    hard = t0 + (COLLECTIVE_SHARE if plan.run_copies else 1.0) * (span_end - t0) - PHASE_MARGIN_S
    cfg = {
        "backend": plan.backend,
        "kinds": coll,
        "min_bytes": p.min_bytes,
        "max_bytes": p.max_bytes,
        "warmup_iters": p.warmup_iters,
        "iters": p.iters,
        "soft_deadline": _soft_deadline(hard),
        "pg_timeout_s": 2 * p.budget_s + 60,
        "local_procs": plan.nproc if plan.join is None else None,
        "pairs": plan.pairs,
    }
    collector.plan_collectives(coll, len(doubling_sizes(p.min_bytes, p.max_bytes)))
    res = supervise(
        "collectives",
        cfg,
        work,
        nproc=plan.nproc,
        hard_deadline=hard,
        join=plan.join,
        on_events=collector.feed,
        interface=plan.interface,
    )
    if plan.rank0:
        keys = [k for k in collector.order if k in coll or k.startswith("pair ")]
        out += [collector.measurement(k, res.status, res.error) for k in keys]
        why = res.error if res.status != "ok" else "the worker ended before reaching it"
        out += [
            Measurement(
                kind=k,
                backend=plan.backend,
                world_size=plan.nproc,
                status=_unstarted(res.status),
                error=f"not measured: {why}",
            )
            for k in coll
            if k not in collector.begin
        ]
    return res.signum


def _copies_phase(
    plan: _RunPlan, work: Path, span_end: float, collector: Collector, out: list[Measurement], signum: int | None
) -> int | None:
    """Launch the copy worker (host<->device, device, peer-to-peer), or say why the copies were not measured."""
    kinds = plan.copy_kinds
    if signum is not None:
        if plan.run_copies:
            why = f"not measured: interrupted by {signal.Signals(signum).name} before the copies"
            out += [Measurement(kind=k, backend="cuda", status="skipped", error=why) for k in kinds]
        return signum
    if not plan.run_copies:
        if kinds and plan.explicit and plan.rank0:
            why = (
                "copies are measured in a local run, not when joining a torchrun/Slurm job"
                if plan.join is not None
                else "copies need a CUDA GPU and torch sees none"
            )
            out += [Measurement(kind=k, backend="cuda", status="skipped", error=why) for k in kinds]
        return None
    p = plan.preset
    hard = span_end - PHASE_MARGIN_S
    cfg = {
        "kinds": kinds,
        "copy_bytes": p.copy_bytes,
        "copies_per_run": p.copies_per_run,
        "copy_runs": p.copy_runs,
        "latency_reps": p.latency_reps,
        "p2p_off": p.p2p_off,
        "soft_deadline": _soft_deadline(hard),
    }
    before = set(collector.order)
    res = supervise("copies", cfg, work, nproc=1, hard_deadline=hard, on_events=collector.feed)
    keys = [k for k in collector.order if k not in before]
    out += [collector.measurement(k, res.status, res.error) for k in keys]
    if not keys:
        why = res.error or "the copy worker ended without a result"
        out += [
            Measurement(kind=k, backend="cuda", status=_unstarted(res.status), error=f"not measured: {why}")
            for k in kinds
        ]
    return res.signum


def _compute_phase(
    plan: _RunPlan,
    rig: Rig,
    work: Path,
    end: float,
    collector: Collector,
    out: list[Measurement],
    signum: int | None,
) -> int | None:
    """The compute measurements last (rank 0 only), or why they were skipped."""
    kinds = plan.compute_kinds
    if not kinds or not plan.rank0:
        return signum
    if not plan.run_compute:
        why = "compute is measured in a local run, not when joining a torchrun/Slurm job"
    elif signum is not None:
        why = f"not measured: interrupted by {signal.Signals(signum).name} before it"
    else:
        ms, signum = _run_compute(rig, work, kinds, plan.has_cuda, end, collector)
        out += ms
        return signum
    out += [Measurement(kind=k, backend=plan.compute_backend, status="skipped", error=why) for k in kinds]
    return signum


def _attach(rig: Rig, out: list[Measurement], cap_note: str | None) -> None:
    """The run's Measurements into the rig (with the capped sweep's note on each collective)."""
    if cap_note:
        for m in out:
            if m.kind in COLLECTIVES:
                m.notes.append(cap_note)
    if out:
        rig.measurements.extend(out)
        rig.provenance["measurements"] = "measured"


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
    backend = "cuda" if has_cuda else "cpu"
    cfg = {"kinds": kinds, "backend": backend, "soft_deadline": _soft_deadline(hard)}
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
