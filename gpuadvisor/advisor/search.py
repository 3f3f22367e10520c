"""When nothing fits: the smallest rig from the catalog that would."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace

from gpuadvisor import catalog
from gpuadvisor.advice_model import RigFit, SmallestRig
from gpuadvisor.advisor import constants as C
from gpuadvisor.advisor.enumeration import layouts
from gpuadvisor.advisor.inference import pick_serving, serving_options
from gpuadvisor.advisor.memory import breakdown
from gpuadvisor.advisor.rigview import RigView, hypothetical
from gpuadvisor.advisor.strategies import _batch, candidates, engine_stack, pick
from gpuadvisor.advisor.workload import Workload

# Rig shapes tried, smallest first: one node of 1, 2, 4 or 8 GPUs, then 8-GPU nodes.
SHAPES: tuple[tuple[int, int], ...] = (
    (1, 1),
    (2, 1),
    (4, 1),
    (8, 1),
    (8, 2),
    (8, 4),
    (8, 8),
    (8, 16),
    (8, 32),
    (8, 64),
)


def _fits(spec: catalog.GpuSpec, per_node: int, nodes: int, w: Workload) -> tuple[str, float | None] | None:
    """(the strategy that fits, its memory per GPU for training) on this catalog rig, or None."""
    view = hypothetical(spec, per_node, nodes, w.inter_node_gbps, network=w.network_spec())
    w2 = replace(w, nodes=nodes, layout=None)  # a forced layout names the scanned rig's sizes, not these
    if w.task == "inference":
        opts, _ = serving_options(view, w2)
        served = pick_serving(opts)
        return (served.name, None) if served else None
    if not _may_fit(view, w2):
        return None
    cands, _ = candidates(view, w2)
    best = pick(cands, view.total_gpus)
    if best is None or not best.with_margin:
        return None
    return best.name, round(best.memory.total_bytes)


def _may_fit(view: RigView, w: Workload) -> bool:
    """Whether some layout could fit with margin, by memory alone: each layout's breakdown with and without
    activation checkpointing, as strategies.evaluate counts it (the stack's own state bytes, the layout's gradient
    accumulation). False only where candidates() would find nothing with margin, without timing any of them."""
    cap = view.cuda_memory_bytes
    host_cap = view.host_memory_bytes * C.HOST_RAM_USABLE_FRACTION if view.host_memory_bytes else None
    modes = {"full": (True,), "auto": (False, True)}.get(w.checkpointing, (False,))
    for lay in layouts(view, w)[0]:
        w2, _ = engine_stack(w, lay)
        acc, _ = _batch(w2, lay.dp, view.total_gpus)
        for recompute in modes:
            mem = breakdown(w2, lay, recompute, acc, view.gpus_per_node, view.nodes)
            host_ok = lay.offload == "none" or (host_cap is not None and mem.host_bytes <= host_cap)
            if host_ok and mem.total_bytes <= cap and (cap - mem.total_bytes) / cap >= C.MARGIN_FRACTION:
                return True
    return False


# The search depends on the workload alone (the catalog's rigs, not the scanned one; each shape sets its own nodes
# and layout): `plan` asks it once per candidate build for the same workload, so it is kept per workload (its repr
# names every field).
_FOUND: dict[str, list[RigFit]] = {}
_TRIED: dict[str, dict[tuple[str, int, int], tuple[str, float | None] | None]] = {}  # per workload: each answer
_SMALLEST_ONLY: ContextVar[bool] = ContextVar("smallest_only", default=False)


@contextmanager
def smallest_only() -> Iterator[None]:
    """Within it the search stops once it has the smallest rig and the fewest of the rig's own GPU type (breadth
    first over the shapes, the same two answers), for callers that show those two alone (plan's reasons);
    SmallestRig.all then holds only the rigs found on the way."""
    token = _SMALLEST_ONLY.set(True)
    try:
        yield
    finally:
        _SMALLEST_ONLY.reset(token)


def smallest_rig(w: Workload, current: catalog.GpuSpec | None) -> SmallestRig | None:
    """The fewest catalog GPUs (then the least memory) on which some candidate fits with margin, without CPU
    offload; and the fewest of the rig's own GPU type. Planned rigs: NVLink as the product usually has it,
    inter-node bandwidth as given or assumed."""
    quick = _SMALLEST_ONLY.get()
    base = repr(replace(w, nodes=1, layout=None))
    key = base + (f"|smallest only, {current.id if current else ''}" if quick else "")
    if key not in _FOUND:
        if len(_FOUND) > 32:
            _FOUND.clear()
            _TRIED.clear()
        _FOUND[key] = _search_smallest(w, current, _TRIED.setdefault(base, {})) if quick else _search(w)
    found = _FOUND[key]
    if not found:
        return None
    # Ties on the GPU count go to the least memory as the datasheets market it (the catalog's MiB figures mix real
    # nvidia-smi totals with converted datasheet sizes, which would not compare like with like).
    overall = min(found, key=lambda f: (f.gpus, f.gpus * f.marketed_gb))
    same = next((f for f in found if current is not None and f.gpu_id == current.id), None)
    return SmallestRig(smallest=overall, same_gpu=same, all=sorted(found, key=lambda f: (f.gpus, f.memory_per_gpu_gib)))


def _served(spec: catalog.GpuSpec, w: Workload) -> bool:
    return not (w.precision == "fp8" and spec.peak_tflops("fp8") is None)


def _search(w: Workload) -> list[RigFit]:
    """Every catalog GPU's smallest fitting shape."""
    found: list[RigFit] = []
    for spec in catalog.gpus():
        if not _served(spec, w):
            continue
        for per_node, nodes in SHAPES:
            hit = _fits(spec, per_node, nodes, w)
            if hit:
                found.append(_rig_fit(spec, per_node, nodes, hit))
                break
    return found


def _search_smallest(
    w: Workload, current: catalog.GpuSpec | None, tried: dict[tuple[str, int, int], tuple[str, float | None] | None]
) -> list[RigFit]:
    """Shape by shape (fewest GPUs first) over every catalog GPU until one fits; then the rig's own GPU alone
    until it fits. Each GPU's first hit is the one _search finds, in catalog order, so the smallest rig and the
    rig's own GPU's are _search's. ``tried`` keeps each (GPU, shape) answer for the next rig's GPU."""
    found: list[RigFit] = []
    pending = [s for s in catalog.gpus() if _served(s, w)]
    for per_node, nodes in SHAPES:
        if found:
            pending = [s for s in pending if current is not None and s.id == current.id]
        if not pending:
            break
        left = []
        for spec in pending:
            if (spec.id, per_node, nodes) not in tried:
                tried[spec.id, per_node, nodes] = _fits(spec, per_node, nodes, w)
            hit = tried[spec.id, per_node, nodes]
            if hit:
                found.append(_rig_fit(spec, per_node, nodes, hit))
            else:
                left.append(spec)
        pending = left
    return found


def _rig_fit(spec: catalog.GpuSpec, per_node: int, nodes: int, hit: tuple[str, float | None]) -> RigFit:
    return RigFit(
        gpu=spec.name,
        gpu_id=spec.id,
        gpus_per_node=per_node,
        nodes=nodes,
        gpus=per_node * nodes,
        memory_per_gpu_gib=round(spec.memory_bytes / C.GiB, 1),
        marketed_gb=spec.memory_gb,
        strategy=hit[0],
        memory_per_gpu_bytes=hit[1],
        description=f"{per_node * nodes}x {spec.name}" + (f" ({nodes} nodes of {per_node})" if nodes > 1 else ""),
    )
