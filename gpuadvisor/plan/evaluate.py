"""One build -> one row of the plan: simulate the build, run the rules and the advisor on it, cost it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gpuadvisor.advice_model import Advice, ServingCandidate, TrainCandidate
from gpuadvisor.catalog.platforms import Prices
from gpuadvisor.plan.build import Build
from gpuadvisor.plan.costs import Cost, JobCost, Ownership, average_draw, build_cost, job_cost
from gpuadvisor.plan.rigspec import rig_description
from gpuadvisor.plan.serving import LAYER_SPLIT_ENGINES, Serving, advisor_serving, serving_throughput
from gpuadvisor.text import plural

# Rules that judge the design of a machine (not its health or software, which a planned machine has no facts of).
DESIGN_AREAS = {"pcie", "topology", "nvlink", "host", "gpu"}
DESIGN_SKIP = {"GA313", "GA314", "GA312"}  # persistence, MIG, power limit: settings, not design


@dataclass
class Need:
    """What the buyer asked for."""

    task: str  # train | full | lora | qlora | inference
    tokens: float | None = None
    context: int | None = None
    concurrency: int | None = None
    days: float | None = None
    budget_usd: float | None = None
    checkpoint_every: str | None = None  # --checkpoint-every (default hourly, said as assumed)
    engine: str | None = None  # serving: llama.cpp / ollama (layer split) are timed by the plan, others by the advisor


@dataclass
class Row:
    build: Build
    buildable: bool = True
    problems: list[str] = field(default_factory=list)
    layout_notes: list[str] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    advice: Advice | None = None
    fits: bool = False
    pick: str | None = None
    reason: str | None = None
    tokens_per_second: float | None = None
    band: tuple[float, float] | None = None
    band_basis: str | None = None
    efficiency: float | None = None  # the advisor's one efficiency figure: the fraction of the ideal speed
    serving: Serving | None = None
    cost: Cost | None = None
    job: JobCost | None = None
    meets_need: bool = False
    need_reason: str | None = None
    rank: int | None = None
    tie_with: list[str] = field(default_factory=list)
    sensitivity: list[str] = field(default_factory=list)  # tight fits: what a small change would flip
    rig: Any = None  # the simulated (or offered) machine, for re-asking the advisor
    workload: Any = None  # the workload this build was judged with
    storage: Any = None  # StorageStall: the checkpoint stall on the build's drives, or why it is not counted
    fits_circuit_reason: str | None = None  # over the stated circuit with no power cap that fits
    circuit: Any = None  # power.CircuitFit: the build on the stated wall circuit(s), or None (none stated)

    @property
    def fails_rules(self) -> list[dict[str, Any]]:
        """Design findings of fail severity: a build with any is never recommended."""
        return [f for f in self.findings if f["severity"] == "fail"]

    @staticmethod
    def need_concurrency(need: Need) -> int:
        return need.concurrency or 1

    def to_dict(self) -> dict[str, Any]:
        b = self.build
        return {
            "build": b.name,
            "title": b.title,
            "origin": b.origin,
            "kind": b.kind,
            **({"owned": True} if b.owned else {}),
            "gpu": b.gpu_label,
            "gpu_count": b.count,
            **(
                {"gpu_kinds": [{"gpu": g.name, "count": n} for g, n in b.mix], "pace_gpu": b.gpu.name}
                if b.mixed
                else {}
            ),
            "nodes": b.nodes,
            "network": b.network,
            "cpu": b.cpu.name if b.cpu else None,
            "sockets": b.sockets,
            "ram_gib": b.ram_gib,
            "psu_watts": b.psu_watts,
            "chassis": b.chassis,
            "buildable": self.buildable,
            "problems": self.problems,
            "layout_notes": self.layout_notes,
            "rank": self.rank,
            "tie_with": self.tie_with,
            "fits": self.fits,
            "meets_need": self.meets_need,
            "need_reason": self.need_reason,
            "pick": self.pick,
            "reason": self.reason,
            "tokens_per_second": self.tokens_per_second,
            "tokens_per_second_band": list(self.band) if self.band else None,
            "band_basis": self.band_basis,
            "efficiency": self.efficiency,
            "efficiency_definition": "fraction of the ideal speed (every GPU at its single-GPU rate, no communication "
            "or recomputation), as the advisor reports it",
            "serving": self.serving.to_dict() if self.serving else None,
            "cost": self.cost.to_dict() if self.cost else None,
            "job": self.job.to_dict() if self.job else None,
            "findings": self.findings,
            "sensitivity": self.sensitivity,
            "storage": self.storage.to_dict() if self.storage else None,
            **({"circuit": self.circuit.to_dict()} if self.circuit else {}),
            "provenance": "predicted",
        }


def _band(pick: TrainCandidate) -> tuple[tuple[float, float] | None, str | None]:
    """The advisor's error band on tokens/s: the range its calibration's published runs put around the figure."""
    b = pick.tokens_band
    if b is None:
        return None, None
    basis = f"{b.coverage} ({b.cases} cases, {b.basis} rates: x{b.ratio_low:.2f}-x{b.ratio_high:.2f})"
    return (float(b.low), float(b.high)), basis


# plan's --engine names of the layer-split engines, as the advisor's engines table names them
SPLIT_ENGINE = {"llama.cpp": "llamacpp", "ollama": "ollama"}


def split_weights(engine: str, model_kw: dict[str, Any]) -> str:
    """The GGUF type a layer-split engine serves for plan's --weights: 4-bit as Q4_K_M, 8-bit as Q8_0, bf16 as the
    F16 file ("none"); none asked: the engine's default download (Q4_K_M)."""
    from gpuadvisor.advisor.engines import default_quantization, layer_split_quantization

    if model_kw.get("weight_quant") == "bf16":
        return "none"
    return default_quantization(engine, layer_split_quantization(engine, model_kw.get("quantization")) or "none")


def workload_for(need: Need, model_kw: dict[str, Any]) -> Any:
    from gpuadvisor.advisor import Workload

    kw = dict(model_kw)
    if need.task == "inference":
        kw.update(task="inference", context=need.context, concurrency=need.concurrency)
        if need.engine in SPLIT_ENGINE:  # the engine's own memory rule and GGUF weights (engines.toml)
            kw["engine"] = SPLIT_ENGINE[need.engine]
            kw["quantization"] = split_weights(kw["engine"], kw)
    else:
        kw.update(task="train", finetune={"train": None, "full": "full", "lora": "lora", "qlora": "qlora"}[need.task])
    return Workload.from_options(**kw)


_SIM_KEY = "\0last simulation"  # the rig cache's entry naming the key of the simulation it gave last


def _advise(rig: Any, workload: Any, cache: dict[str, Any] | None, shared: str | None) -> Any:
    """The advisor on the rig; once per simulated machine and workload where ``shared`` names the simulation (the
    advisor reads neither the PSU nor the hostname, the only facts a bought and a rented build of it differ in)."""
    from gpuadvisor.advisor import advise

    if cache is None or shared is None:
        return advise(rig, workload)
    key = f"\0advice|{shared}|{rig.host.memory_total_bytes}|{workload!r}"
    if key not in cache:
        cache[key] = advise(rig, workload)
    return cache[key]


def _simulated(desc_dict: dict[str, Any], origin: str, cache: dict[str, Any] | None) -> Any:
    """The simulated rig of a description; a bought and a rented build of the same machine share one simulation
    (each gets its own copy: a pickled one, much cheaper to copy than a deep copy)."""
    import json
    import pickle

    from gpuadvisor.collect import simulate_description
    from gpuadvisor.probes.rigdesc import parse_description

    host = dict(desc_dict.get("host", {}))
    psu, hostname = host.pop("psu_watts", None), host.pop("hostname", None)
    same = {k: v for k, v in desc_dict.items() if k not in ("name", "title", "description")} | {"host": host}
    key = json.dumps(same, sort_keys=True, default=str)
    if cache is not None:
        cache[_SIM_KEY] = key
    if cache is not None and key in cache:
        rig = pickle.loads(cache[key])
        rig.host.psu_watts = float(psu) if psu is not None else None
        if hostname:
            rig.host.hostname = hostname
        return rig
    rig = simulate_description(parse_description(desc_dict, origin))
    if cache is not None:
        cache[key] = pickle.dumps(rig, pickle.HIGHEST_PROTOCOL)
    return rig


def evaluate_build(
    b: Build,
    need: Need,
    workload: Any,
    prices: Prices,
    *,
    own: Ownership,
    calibration: Any = None,
    rig_cache: dict[str, Any] | None = None,
    circuit: Any = None,
) -> Row:
    from gpuadvisor.rules import evaluate

    row = Row(build=b)
    shared: str | None = None  # the simulation's key, where the advice may be shared with a build of the same machine
    row.cost = build_cost(b, prices)
    if b.storage is not None:
        from gpuadvisor.plan.storage import add_drive_price

        add_drive_price(row.cost, b.storage, b.nodes, b.rent)
    if own.have and not b.owned:
        from gpuadvisor.plan.owned import apply_owned

        apply_owned(row.cost, b, prices, own.have)
    row.layout_notes += list(b.notes) + list(row.cost.notes) + mixed_notes(b)
    if b.rig is not None:  # a machine on offer: its own facts
        rig = b.rig
    else:
        desc_dict, layout = rig_description(b)
        row.layout_notes += list(layout.notes)
        if not layout.buildable:
            row.buildable = False
            row.problems = list(layout.problems)
            row.need_reason = "cannot be built: " + "; ".join(layout.problems)
            return row
        rig = _simulated(desc_dict, b.origin, rig_cache)
        if calibration is None and rig_cache is not None:  # the same machine, bought or rented: one advice
            shared = rig_cache.get(_SIM_KEY)
        rig.source.kind = "spec"
        rig.source.detail = f"planned build {b.name}"
    if calibration is not None:
        calibration.apply(rig, b)
    for f in evaluate(rig, None):
        if f.severity in ("warn", "fail", "info") and f.area in DESIGN_AREAS and f.code not in DESIGN_SKIP:
            row.findings.append(
                {
                    "code": f.code,
                    "name": f.name,
                    "severity": f.severity,
                    "message": f.message,
                    "fix": getattr(f, "fix", None),
                }
            )
    if b.nodes > 1:  # N identical nodes: the advisor's multi-node model with the build's network
        from dataclasses import replace

        workload = replace(workload, nodes=b.nodes, inter_node_gbps=b.inter_node_gbps)
    adv = _advise(rig, workload, rig_cache, shared)
    row.advice = adv
    row.rig, row.workload = rig, workload
    row.fits = adv.fits
    row.pick = adv.pick_name
    row.reason = adv.reason
    if not adv.fits:
        _more_ram(row, rig, workload, rig_cache, shared)
    pick = adv.pick
    if need.task == "inference":
        split = need.engine in LAYER_SPLIT_ENGINES
        if split:  # timed by the plan: the advisor's memory accounting is vLLM's
            row.serving = serving_throughput(
                adv, gpus=b.count, spec=b.gpu, workload=workload, layer_split=True, cards=b.cards if b.mixed else None
            )
        else:  # the advisor's pick, its engine and its replicas over every GPU of the build
            row.serving = advisor_serving(adv, row.need_concurrency(need))
        row.tokens_per_second = row.serving.tokens_per_second if row.serving else None
        if row.serving:
            row.band, row.band_basis = row.serving.band, row.serving.band_basis
        if row.serving and row.serving.tensor_parallel != (pick.gpus if isinstance(pick, ServingCandidate) else 1):
            row.pick = f"{row.serving.name} x{row.serving.replicas}"
            row.reason = (
                f"{plural(row.serving.replicas, 'replica')} of {row.serving.name} serve {row.need_concurrency(need)} "
                "sequences "
                "fastest; "
                f"the advisor's smallest fitting size is {adv.pick_name} ({adv.reason})"
            )
        elif row.serving:
            row.pick = f"{row.serving.name} x{row.serving.replicas}"
    elif row.fits and isinstance(pick, TrainCandidate):
        row.tokens_per_second = pick.tokens_per_second
        row.efficiency = pick.ideal_speed_fraction
        row.band, row.band_basis = _band(pick)
    if circuit is not None and not b.rent:
        _on_circuit(row, circuit, workload.serving_lengths[1] if row.serving else 0)
    if row.serving and need.engine in LAYER_SPLIT_ENGINES and row.need_concurrency(need) == 1:
        row.layout_notes.append(_one_stream(row.serving, workload))  # at the cap, where one applies
    average_draw(row.cost, b, need.task != "inference" and row.fits, row.efficiency)
    row.job = job_cost(b, row.cost, row.tokens_per_second, need.tokens, own, prices)
    if need.task != "inference":
        row.storage = _storage_stall(row, need, rig, adv)
        st = row.storage
        if st.counted and st.hours_with_stall and st.train_hours and row.tokens_per_second:
            # the time to train includes the blocking saves: the job at the rate that spends that time
            rate = row.tokens_per_second * st.train_hours / st.hours_with_stall
            row.job = job_cost(b, row.cost, rate, need.tokens, own, prices)
            row.job.notes.append(
                f"time includes the checkpoint stall on the build's drives: {st.train_hours:,.1f} h of steps + "
                f"{(st.stall_seconds or 0) / 3600:,.2f} h of saves"
            )
    row.sensitivity = _sensitivity(adv, b)
    row.meets_need, row.need_reason = _meets(row, need)
    return row


def _one_stream(s: Serving, workload: Any) -> str:
    """One stream on a layer-split engine: the writing speed (llama.cpp's tg figure) and the prompt's wait."""
    inp, out, _ = workload.serving_lengths
    g = s.generation_tokens_per_second or 0.0
    return (
        f"one stream writes at {g:,.1f} tokens/s once its {inp:,}-token prompt is read ({s.ttft_s:,.1f} s): "
        f"{s.tokens_per_second:,.1f} tokens/s over each {inp:,} + {out:,}-token request (--input-len, --output-len)"
    )


def mixed_notes(b: Build) -> list[str]:
    """How a build of more than one GPU kind is judged."""
    if not b.mixed:
        return []
    return [
        f"mixed GPUs ({b.gpu_label}): training and tensor-parallel serving run at the slowest card's pace "
        f"({b.gpu.name}) on the smallest card's memory; a layer-split engine (llama.cpp, Ollama) gives each card "
        "layers in proportion to its memory and each runs its share at its own speed"
    ]


HOST_RAM_SHORT = re.compile(r"needs ([\d,.]+) GiB of host RAM per node > ([\d,.]+) GiB usable")
DIMM_STEP_GIB = 32  # host RAM is bought in DIMMs: the figure is rounded up to a multiple of 32 GiB


def _more_ram(
    row: Row, rig: Any, workload: Any, cache: dict[str, Any] | None = None, shared: str | None = None
) -> None:
    """A machine short only of host RAM for CPU offload: the RAM that makes the same GPUs fit (the advisor
    re-asked with it), and whether the build's platform holds that much, in place of a bigger GPU."""
    import math

    m = HOST_RAM_SHORT.search(row.reason or "")
    if m is None:
        return
    need = float(m[1].replace(",", "")) / 0.9  # the advisor counts 90 % of the host's RAM as usable
    gib = math.ceil(need / DIMM_STEP_GIB) * DIMM_STEP_GIB
    pick = _pick_with_ram(rig, int(gib * 2**30), workload, cache, shared)
    if pick is None:
        return
    b = row.build
    has = rig.host.memory_total_bytes / 2**30 if rig.host.memory_total_bytes else None
    fix = f"add RAM: with {gib:,} GiB of host RAM" + (f" (it has {has:,.0f})" if has else "")
    fix += f" the same GPUs fit, with {pick}"
    cap = b.cpu.max_memory_gib * b.sockets if b.cpu is not None else None
    if b.cpu is not None and cap is not None and gib > cap:
        fix += (
            f"; a {b.cpu.name} board holds at most {cap:,} GiB, so the same GPUs on a platform that holds "
            f"{gib:,} GiB (a workstation or server CPU)"
        )
    row.reason = fix + " (as it is: " + (row.reason or "").split(" Smallest rig that would")[0] + ")"


def _pick_with_ram(rig: Any, ram: int, workload: Any, cache: dict[str, Any] | None, shared: str | None) -> str | None:
    """The advisor's pick for the rig with ``ram`` bytes of host RAM (None: still nothing fits): its pick alone,
    the rig's RAM set for the question and put back; once per simulated machine and workload where ``shared``."""
    from gpuadvisor.advisor.advice import fitting_pick

    key = f"\0pick|{shared}|{ram}|{workload!r}"
    if cache is not None and shared is not None and key in cache:
        return cache[key]
    had = rig.host.memory_total_bytes
    rig.host.memory_total_bytes = ram
    try:
        pick = fitting_pick(rig, workload)
    finally:
        rig.host.memory_total_bytes = had
    if cache is not None and shared is not None:
        cache[key] = pick
    return pick


def _on_circuit(row: Row, circuit: Any, output_len: int) -> None:
    """The build on the stated circuit(s), by the one power model's load per node: over them, the power cap that
    fits (the speed and the power at that cap are then the row's: training and prompt reading on the published
    compute-bound sweeps, token writing on the decode sweeps where the decode step is memory-bound); no cap fits:
    it does not meet the need."""
    from gpuadvisor.plan.costs import gpu_class, measured_training_note
    from gpuadvisor.plan.serving import capped
    from gpuadvisor.power import circuit_fit
    from gpuadvisor.power_curves import COMPUTE, DECODE

    b, c = row.build, row.cost
    assert c is not None
    boards = [g.tdp_w or 0.0 for g in b.cards]
    writing = DECODE if row.serving and row.serving.bound == "memory" else COMPUTE
    kinds = (writing, COMPUTE) if row.serving and writing != COMPUTE else (COMPUTE,)
    fit = circuit_fit(c.power_w / b.nodes, boards, b.psus, circuit, kinds, gpu_class(b.gpu.id))
    row.circuit = fit
    if fit.fits:
        return
    fit.text += measured_training_note(b, circuit.continuous_w * c.power_w / b.nodes / fit.per_circuit_w)
    if fit.cap_w is None or fit.speed_fraction is None:
        row.fits_circuit_reason = f"over the circuit: {fit.text}"
        return
    saved = sum(max(w - fit.cap_w, 0.0) for w in boards) * b.nodes
    c.power_w -= saved
    c.power_basis += f"; GPUs capped at {fit.cap_w:g} W for the circuit"
    if row.serving:
        row.serving = capped(row.serving, fit.speeds[COMPUTE], fit.speeds[writing], output_len)
        row.tokens_per_second, row.band = row.serving.tokens_per_second, row.serving.band
    elif row.tokens_per_second:
        row.tokens_per_second *= fit.speed_fraction
        if row.band:
            row.band = (row.band[0] * fit.speed_fraction, row.band[1] * fit.speed_fraction)


def _storage_stall(row: Row, need: Need, rig: Any, adv: Advice) -> Any:
    from gpuadvisor.advisor.checkpoint import parse_interval, plan_checkpoint
    from gpuadvisor.plan.storage import checkpoint_stall

    cp = plan_checkpoint(rig, adv, need.checkpoint_every) if row.fits else None
    if cp is not None:
        interval, source = cp.interval_seconds, cp.interval_source
    else:
        interval, source = parse_interval(need.checkpoint_every, None)
    return checkpoint_stall(
        row.build.storage,
        cp.total_bytes if cp else None,
        cp.per_node_bytes if cp else None,
        row.job.hours if row.job else None,
        interval,
        source,
    )


def _meets(row: Row, need: Need) -> tuple[bool, str | None]:
    if not row.fits:
        return False, row.reason or "does not fit"
    if row.fits_circuit_reason:
        return False, row.fits_circuit_reason
    if need.days is not None and row.job and row.job.hours is not None and row.job.hours > need.days * 24:
        return False, f"takes {row.job.hours / 24:.1f} days, more than the {need.days:g} asked"
    return True, None


TIGHT_FRACTION = 0.05  # a fit within 5 % of a GPU's memory is tight: a longer sequence or batch will not fit
TIGHT_GIB = 3.0  # or within 3 GiB: doubling an 8B model's 2k-token sequence adds more activations than that


def _sensitivity(adv: Advice, b: Build) -> list[str]:
    """Say when the pick fits with little memory to spare (the answer flips with a longer sequence or batch)."""
    pick = adv.pick
    if not isinstance(pick, TrainCandidate) or not pick.capacity_bytes > 0:
        return []
    used, cap = pick.memory.total_bytes, pick.capacity_bytes
    spare = (cap - used) / 2**30
    if 0 <= cap - used < max(TIGHT_FRACTION * cap, TIGHT_GIB * 2**30):
        return [
            f"{b.name} fits with {spare:.1f} GiB to spare per GPU ({used / 2**30:.1f} of {cap / 2**30:.1f} GiB): "
            "a longer sequence, a larger micro-batch or a framework's extra buffers will not fit"
        ]
    return []
