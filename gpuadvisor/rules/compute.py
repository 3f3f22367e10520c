"""GA607: a GPU's measured compute or memory bandwidth far below its datasheet peak (gpuadvisor bench --compute)."""

from __future__ import annotations

from gpuadvisor.facts import COMPUTE, Gpu, Measurement, Rig
from gpuadvisor.rules.engine import Context
from gpuadvisor.rules.helpers import gpu_list
from gpuadvisor.rules.registry import rule

NO_COMPUTE = "no compute measurement in this scan (run gpuadvisor bench --compute)"
SLOWDOWN_REASONS = (
    "sw_power_cap",
    "hw_slowdown",
    "sw_thermal_slowdown",
    "hw_thermal_slowdown",
    "hw_power_brake_slowdown",
    "applications_clocks_setting",
)


def _evidence(rig: Rig, index: int) -> tuple[list[str], dict[str, object]]:
    """What the scan's facts say about clocks and power for this GPU (said only when present)."""
    try:
        g: Gpu = rig.gpu(index)
    except KeyError:
        return [], {}
    said: list[str] = []
    facts: dict[str, object] = {}
    reasons = [r for r in (g.clocks_event_reasons or []) if r in SLOWDOWN_REASONS]
    if g.clocks_event_reasons is not None:
        facts["clocks_event_reasons"] = g.clocks_event_reasons
        if reasons:
            said.append("clocks held down by " + ", ".join(reasons))
    if g.power_limit_w is not None:
        facts["power_limit_w"] = g.power_limit_w
        if g.power_default_limit_w is not None:
            facts["power_default_limit_w"] = g.power_default_limit_w
            if g.power_limit_w < 0.95 * g.power_default_limit_w:
                said.append(f"power limit {g.power_limit_w:g} W, below the default {g.power_default_limit_w:g} W")
    if g.temperature_c is not None:
        facts["temperature_c"] = g.temperature_c
    if g.performance_state is not None:
        facts["performance_state"] = g.performance_state
    return said, facts


def _describe(m: Measurement) -> str:
    if m.kind == "matmul":
        return f"{m.dtype} matmul {m.shape}"
    return "device memory copy"


@rule(
    "GA607",
    "compute-below-peak",
    area="gpu",
    severity="warn",
    thresholds=("compute_peak_warn_ratio", "memory_bandwidth_warn_ratio"),
    requires=("measurements", "gpus"),
)
def compute_below_peak(rig: Rig, ctx: Context):
    """A GPU's measured matmul TFLOP/s or memory bandwidth is far below its datasheet peak.

    What it checks
        Each GPU measurement of gpuadvisor bench --compute: dense matmul TFLOP/s per precision (bf16, fp16,
        tf32, fp8) on large square and transformer-shaped products against the datasheet dense peak of that
        precision (no sparsity figure), and device memory copy bandwidth against the datasheet memory
        bandwidth. The clock-event reasons, power limit and temperature the scan read are quoted as evidence.
        CPU measurements are not judged: a GPU datasheet peak does not apply to them.
    Why it matters
        Training time scales with the matmul rate: a GPU at half its expected rate halves the throughput of
        its job, and in data-parallel training the whole job waits for it. The usual causes are a power cap
        set below the default, thermal or hardware slowdown (cooling, a failing fan or power brake), or clocks
        locked low.
    Threshold
        Warn below compute_peak_warn_ratio of the dense peak (matmul) or below memory_bandwidth_warn_ratio of
        the datasheet bandwidth (memory copy).
    Source
        Datasheet dense peaks: gpuadvisor's GPU catalog (each row cites its NVIDIA datasheet). What healthy
        GPUs reach: the Maximum Achievable Matmul FLOPS table of Stas Bekman's Machine Learning Engineering
        (chapter 'Accelerators': H100 SXM 0.80, A100 SXM 0.87 of the bf16 dense peak); clock-event reasons:
        NVML nvmlDeviceGetCurrentClocksEventReasons.
    How to fix
        Read nvidia-smi -q -d PERFORMANCE,POWER,TEMPERATURE while the GPU is busy; restore the default power
        limit (nvidia-smi -pl), reset locked clocks (nvidia-smi -rgc), check cooling and airflow; rerun
        gpuadvisor bench --compute. Power-limited cards (L4, T4) reach a smaller share of their datasheet peak
        by design: compare with a healthy card of the same model.
    """
    ms = [m for m in rig.measurements if m.kind in COMPUTE]
    if not ms:
        yield ctx.not_checked(NO_COMPUTE)
        return
    cpu = [m for m in ms if m.backend == "cpu"]
    gpu = [m for m in ms if m.backend == "cuda" and m.status in ("ok", "partial")]
    if cpu and not gpu:
        yield ctx.not_checked(
            "compute was measured on the CPU only (torch saw no GPU): a GPU datasheet peak does "
            "not apply to a CPU figure"
        )
        return
    if not gpu:
        yield ctx.not_checked("no GPU compute measurement completed in this scan (see the bench errors)")
        return
    no_peak = [m for m in gpu if m.ratio is None]
    if no_peak and len(no_peak) == len(gpu):
        why = no_peak[0].why("expected_tflops") or no_peak[0].why("expected_gbps") or "no datasheet figure"
        yield ctx.not_checked(
            f"no datasheet peak to compare with: {why}", gpus=sorted({g for m in no_peak for g in m.gpus})
        )
        return
    warn_c, warn_m = ctx.t("compute_peak_warn_ratio"), ctx.t("memory_bandwidth_warn_ratio")
    low: dict[int, list[Measurement]] = {}
    for m in gpu:
        if m.ratio is None or not m.gpus:
            continue
        limit = warn_c if m.kind == "matmul" else warn_m
        if m.ratio < limit:
            low.setdefault(m.gpus[0], []).append(m)
    for index, bad in sorted(low.items()):
        worst = min(bad, key=lambda m: m.ratio or 0.0)
        parts = []
        for m in bad:
            if m.kind == "matmul":
                parts.append(
                    f"{_describe(m)} {m.value_tflops:.1f} TFLOP/s = {m.ratio:.0%} of the {m.expected_tflops:g} "
                    f"dense peak"
                )
            else:
                parts.append(
                    f"memory copy {m.value_gbps:.0f} GB/s = {m.ratio:.0%} of the {m.expected_gbps:g} GB/s "
                    "datasheet bandwidth"
                )
        said, facts = _evidence(rig, index)
        cause = (
            ("; ".join(said) + " (read at scan time)")
            if said
            else (
                "likely a power cap, thermal or hardware slowdown, or locked clocks (the scan holds no clock-event "
                "reason or lowered power limit for it: read nvidia-smi -q -d PERFORMANCE while it is busy)"
            )
        )
        yield ctx.finding(
            f"{gpu_list([index])} runs far below its datasheet peak: " + "; ".join(parts) + f". Cause: {cause}",
            gpus=[index],
            subject=gpu_list([index]),
            observed={
                "measurements": [
                    {
                        "kind": m.kind,
                        "dtype": m.dtype,
                        "shape": m.shape,
                        "value_tflops": m.value_tflops,
                        "value_gbps": m.value_gbps,
                        "ratio": m.ratio,
                    }
                    for m in bad
                ],
                **facts,
            },
            expected={
                "ratio_min_matmul": warn_c,
                "ratio_min_memory": warn_m,
                "peak": worst.expected_tflops if worst.kind == "matmul" else worst.expected_gbps,
            },
            expected_source=worst.expected_source,
            fix="restore the default power limit (nvidia-smi -pl), reset locked clocks (nvidia-smi -rgc), check "
            "cooling; rerun gpuadvisor bench --compute",
        )
