"""When nothing fits: the smallest rig from the catalog that would."""

from __future__ import annotations

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


# The search depends on the workload alone (the catalog's rigs, not the scanned one): `plan` asks it once per
# candidate build for the same workload, so it is kept per workload (its repr names every field).
_FOUND: dict[str, list[RigFit]] = {}


def smallest_rig(w: Workload, current: catalog.GpuSpec | None) -> SmallestRig | None:
    """The fewest catalog GPUs (then the least memory) on which some candidate fits with margin, without CPU
    offload; and the fewest of the rig's own GPU type. Planned rigs: NVLink as the product usually has it,
    inter-node bandwidth as given or assumed."""
    key = repr(w)
    if key not in _FOUND:
        if len(_FOUND) > 32:
            _FOUND.clear()
        _FOUND[key] = _search(w)
    found = _FOUND[key]
    if not found:
        return None
    # Ties on the GPU count go to the least memory as the datasheets market it (the catalog's MiB figures mix real
    # nvidia-smi totals with converted datasheet sizes, which would not compare like with like).
    overall = min(found, key=lambda f: (f.gpus, f.gpus * f.marketed_gb))
    same = next((f for f in found if current is not None and f.gpu_id == current.id), None)
    return SmallestRig(smallest=overall, same_gpu=same, all=sorted(found, key=lambda f: (f.gpus, f.memory_per_gpu_gib)))


def _search(w: Workload) -> list[RigFit]:
    found: list[RigFit] = []
    for spec in catalog.gpus():
        for per_node, nodes in SHAPES:
            if w.precision == "fp8" and spec.peak_tflops("fp8") is None:
                break
            hit = _fits(spec, per_node, nodes, w)
            if hit:
                found.append(
                    RigFit(
                        gpu=spec.name,
                        gpu_id=spec.id,
                        gpus_per_node=per_node,
                        nodes=nodes,
                        gpus=per_node * nodes,
                        memory_per_gpu_gib=round(spec.memory_bytes / C.GiB, 1),
                        marketed_gb=spec.memory_gb,
                        strategy=hit[0],
                        memory_per_gpu_bytes=hit[1],
                        description=f"{per_node * nodes}x {spec.name}"
                        + (f" ({nodes} nodes of {per_node})" if nodes > 1 else ""),
                    )
                )
                break
    return found
