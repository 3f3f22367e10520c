#!/usr/bin/env python3
"""Fit the advisor's time-model constants on the published runs, check them on runs they never saw, and derive
the error band from those held-out runs.

    .venv/bin/python benchmarks/fit_advisor.py           # fit, refit per held-out group, print the report
    .venv/bin/python benchmarks/fit_advisor.py --write   # also write gpuadvisor/advisor/fitted.toml and the
                                                         # bands of gpuadvisor/advisor/calibration.toml

Each parameter of FITS (a key of fitted.toml, a field of the advisor's FitParams) is fitted on the counted
throughput cases of benchmarks/calibration_cases.toml its selector picks (the runs whose time it moves: eager
PyTorch for the memory-bound bytes, the torch.compile runs for the compile factor, the Megatron-Core + Transformer
Engine runs for Megatron's, the QLoRA runs for the dequantisation, the sharded runs for the overlap): least squares
on log(predicted / measured), by coordinate descent (golden-section search per parameter after a grid, the others
held), in the order of FITS, five rounds. Nothing is chosen per case.
Each candidate is evaluated by predicting the cases with a FitParams made of its values (calibration_cases.predict).

Held out: for every GPU generation (leave-one-generation-out) and every publication (leave-one-source-out) the
constants are refitted without that group's cases and the group is predicted with them; a constant left without
any case falls back to its prior (the value counted from first principles, or 1 for a factor). The shipped band
is the 10th to 90th percentile of the leave-one-generation-out ratios (each case predicted by constants fitted
without its generation), and the coverage it states is the share of those held-out ratios inside it. The check
of that band on runs it did not see: for each generation, the band made from the other generations' held-out
ratios, and the share of this generation's held-out cases inside it.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import calibration_cases as P  # noqa: E402

from gpuadvisor.advisor.calibration import BANDS_FILE  # noqa: E402
from gpuadvisor.advisor.fitted import FITTED_FILE, FitParams  # noqa: E402
from gpuadvisor.catalog import generations  # noqa: E402

HELD_OUT_GOAL = 0.7  # share of held-out cases inside the band made without their generation


def _stack(case: dict[str, Any]) -> str:
    stack = case.get("stack", "pytorch")
    if stack in ("pytorch", "deepspeed") and case.get("compile"):
        return "compile"
    return str(stack)


def _power_limited(case: dict[str, Any], arch: str) -> bool:
    """A run of generation ``arch`` on a card held below the generation's top board power (the case's published
    power limit, else the card's datasheet TDP): where the generation's power cap can bind. Not a card with its own
    measured rate (catalog mamf_tflops): that figure, scaled by the power, sets its rate."""
    from gpuadvisor import catalog

    spec = catalog.gpu_by_id(case["gpu"])
    if spec is None or spec.architecture != arch or spec.mamf_tflops:
        return False
    top = generations.top_board_power(arch) or 0.0
    watts = case.get("power_limit_w") or spec.tdp_w or top
    return bool(watts < top)


def _torch_ring(case: dict[str, Any]) -> bool:
    """A run with PyTorch's ring attention: a torchtitan context-parallel layout (cp > 1) on the PyTorch stack."""
    if "cp=" not in case.get("layout", "") or case.get("stack", "pytorch") != "pytorch":
        return False
    return bool(P.layout(case, P.view_for(case)).torch_ring)


def _sharded(case: dict[str, Any]) -> bool:
    return case.get("strategy") in ("fsdp", "hsdp", "fsdp-offload") or case.get("zero_stage") == 3


@dataclass(frozen=True)
class Fit:
    """One fitted constant: the cases it is fitted on, its search range and its prior."""

    name: str
    low: float
    high: float
    prior: float  # without any case to fit on: counted from first principles, or no effect (1 for a factor)
    prior_why: str
    selects: Callable[[dict[str, Any]], bool]
    on: str  # what it is fitted on, in words (written next to the value)


FITS: tuple[Fit, ...] = (
    Fit(
        "memory_bound_bytes",
        4.0,
        80.0,
        24.0,
        "counted: each elementwise op reads and writes its tensors",
        lambda c: _stack(c) in ("pytorch", "deepspeed") and c.get("finetune", "full") == "full",
        "eager PyTorch / DeepSpeed runs, full training",
    ),
    Fit(
        "compile_memory_bound_factor",
        0.1,
        1.0,
        1.0,
        "no fusion",
        lambda c: _stack(c) == "compile" and c.get("finetune", "full") != "qlora",
        "torch.compile runs (not QLoRA)",
    ),
    Fit(
        "megatron_memory_bound_factor",
        0.05,
        1.0,
        1.0,
        "no fusion",
        lambda c: _stack(c) == "megatron",
        "Megatron-Core + Transformer Engine runs (NeMo, Megatron-Bridge)",
    ),
    Fit(
        "qlora_dequant_bytes_per_param",
        0.5,
        80.0,
        4.5,
        "counted: 0.5 read + 2 written + 2 read by the matmul",
        lambda c: c.get("finetune") == "qlora",
        "QLoRA runs",
    ),
    Fit(
        "sharded_overlap",
        0.0,
        1.0,
        1.0,
        "the overlap FSDP's prefetch aims at",
        _sharded,
        "sharded runs (FSDP, ZeRO-3, HSDP)",
    ),
    Fit(
        "tflops_per_watt.ada",
        0.1,
        100.0,
        100.0,
        "no power cap",
        lambda c: _power_limited(c, "ada"),
        "Ada runs below the generation's top board power (450 W)",
    ),
    Fit(
        "tflops_per_watt.hopper",
        0.1,
        100.0,
        100.0,
        "no power cap",
        lambda c: _power_limited(c, "hopper"),
        "Hopper runs below the generation's top board power (700 W)",
    ),
    Fit(
        "flash1_attention_factor",
        0.2,
        1.0,
        0.5,
        "Dao 2023: FlashAttention-2 about 2x FlashAttention-1",
        lambda c: c.get("attention_kernel") == "flash1",
        "runs with a FlashAttention-1 class kernel (llm-foundry's Triton FlashAttention)",
    ),
    Fit(
        "ring_attention_factor",
        0.2,
        1.0,
        1.0,
        "no loss in the ring's steps",
        _torch_ring,
        "PyTorch context-parallel runs (ring attention)",
    ),
    Fit(
        "deepspeed_sharded_comm_factor",
        1.0,
        4.0,
        1.0,
        "NCCL's ring time",
        lambda c: _sharded(c) and c.get("stack") == "deepspeed",
        "DeepSpeed ZeRO-3 runs",
    ),
    Fit(
        "deepspeed_sharded_overlap",
        0.0,
        1.0,
        1.0,
        "the overlap its prefetch aims at",
        lambda c: _sharded(c) and c.get("stack") == "deepspeed",
        "DeepSpeed ZeRO-3 runs",
    ),
)


def _multi_node(case: dict[str, Any]) -> bool:
    return int(case.get("nodes", 1)) > 2


def _xla_across(case: dict[str, Any]) -> bool:
    return case.get("stack") == "jax" and int(case.get("nodes", 1)) > 1 and case.get("strategy") == "hsdp"


FITS = FITS + (
    Fit(
        "network_scale",
        0.0,
        1.0,
        0.0,
        "no loss at scale",
        _multi_node,
        "runs over more than two nodes",
    ),
    Fit(
        "xla_cross_node_overlap",
        0.0,
        1.0,
        1.0,
        "the overlap XLA's latency-hiding scheduler aims at",
        _xla_across,
        "MaxText runs with data parallelism across nodes",
    ),
)

# The publication each case comes from, by the letters its id starts with (leave-one-source-out).
SOURCES = {
    # sibling tables of one publication are one source: holding one out holds out all of them
    "TT": "torchtitan (docs/performance.md and benchmarks/)",
    "TA": "torchtitan (docs/performance.md and benchmarks/)",
    "TCP": "torchtitan (docs/performance.md and benchmarks/)",
    "FA": "llm-foundry",
    "FB": "llm-foundry",
    "FH": "llm-foundry",
    "NA": "Narayanan et al. 2021",
    "NZ": "Narayanan et al. 2021",
    "L": "Llama 2 paper",
    "TU": "torchtune",
    "TB": "torchtune",
    "NM": "NeMo 24.07 tables",
    "MB": "Megatron-Bridge performance summary (25.09, 25.11)",
    "NB": "Megatron-Bridge performance summary (25.09, 25.11)",
    "MX": "Megatron-LM MoE README",
    "MXA": "MaxText A3 configs (llama_2_7b README)",
    "AQ": "Answer.AI fsdp_qlora",
    "AL": "Answer.AI fsdp_qlora",
    "AY": "Answer.AI fsdp_qlora",
    "JX": "MaxText (NVIDIA JAX-Toolbox)",
    "GH": "gpuadvisor on a lent H100 (transformers)",
}


def source_of(case: dict[str, Any]) -> str:
    if "publication" in case:
        return str(case["publication"])
    prefix = "".join(ch for ch in case["id"] if ch.isalpha())
    while prefix and prefix not in SOURCES:
        prefix = prefix[:-1]
    return SOURCES.get(prefix, case.get("source", "?"))


def generation_of(case: dict[str, Any]) -> str:
    from gpuadvisor import catalog

    spec = catalog.gpu_by_id(case["gpu"])
    return spec.architecture if spec is not None else "unknown"


def throughput_cases(cases: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The counted throughput cases the constants are fitted on (not those the hardware cannot produce, nor the
    publications kept out of every fit: ``held_out``)."""
    every = cases if cases is not None else P.load_cases()
    return [c for c in every if c["kind"] == "throughput" and not c.get("excluded") and not c.get("held_out")]


# -- fitting ---------------------------------------------------------------------------------------------------


def ratios(cases: list[dict[str, Any]], values: dict[str, float]) -> list[float]:
    """predicted / measured of each case with the parameters at ``values``."""
    params = FitParams.from_values(values)
    return [P.predict(c, params) / float(c["measured"]) for c in cases]


def _loss(cases: list[dict[str, Any]], values: dict[str, float]) -> float:
    return sum(math.log(r) ** 2 for r in ratios(cases, values))


def _golden(f: Callable[[float], float], lo: float, hi: float, iterations: int = 24, grid: int = 24) -> float:
    """Minimise f over [lo, hi] (on a log scale when lo > 0): the best of ``grid`` evenly spaced points first (a loss
    flat over part of the range, as a cap that does not bind, would mislead a bracket), then golden-section search
    between its neighbours. On a tie the larger value wins (for a cap: no cap)."""
    log = lo > 0
    a0, b0 = (math.log(lo), math.log(hi)) if log else (lo, hi)

    def at(x: float) -> float:
        return f(math.exp(x) if log else x)

    xs = [a0 + (b0 - a0) * i / (grid - 1) for i in range(grid)]
    losses = [at(x) for x in xs]
    best = min(range(grid), key=lambda i: (losses[i], -i))
    a, b = xs[max(0, best - 1)], xs[min(grid - 1, best + 1)]
    g = (math.sqrt(5) - 1) / 2
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = at(c), at(d)
    for _ in range(iterations):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = at(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = at(d)
    x = (a + b) / 2
    if losses[best] < min(fc, fd, at(x)):  # the grid point itself (at an end of the range)
        x = xs[best]
    return math.exp(x) if log else x


def fit(cases: list[dict[str, Any]], rounds: int = 5) -> tuple[dict[str, float], dict[str, list[str]]]:
    """The constants fitted on ``cases`` and the ids each was fitted on (a constant without cases: its prior).
    The first round searches each constant's whole range; the later ones a narrower range around its value, so
    that constants fitted on the same runs (DeepSpeed's two) settle together."""
    values = {f.name: f.prior for f in FITS}
    used = {f.name: [c["id"] for c in cases if f.selects(c)] for f in FITS}
    values.update(power_range(cases))
    for k in range(rounds):
        for f in FITS:
            mine = [c for c in cases if f.selects(c)]
            if not mine:
                continue

            def loss(x: float, f: Fit = f, mine: list[dict[str, Any]] = mine) -> float:
                return _loss(mine, {**values, f.name: x})

            if k == 0:
                values[f.name] = _golden(loss, f.low, f.high)
            else:
                v = values[f.name]
                if f.low > 0:
                    lo, hi = max(f.low, v / 1.5), min(f.high, v * 1.5)
                else:
                    lo, hi = max(f.low, v - 0.2), min(f.high, v + 0.2)
                values[f.name] = _golden(loss, lo, hi, iterations=14, grid=5)
    return {k: round(v, 3) for k, v in values.items()}, used


def _watts(case: dict[str, Any]) -> float:
    from gpuadvisor import catalog

    spec = catalog.gpu_by_id(case["gpu"])
    return float(case.get("power_limit_w") or (spec.tdp_w if spec is not None else 0) or 0)


def power_range(cases: list[dict[str, Any]]) -> dict[str, float]:
    """power_cap_min_watts of each generation with a fitted power cap: the lowest board power of the runs its cap is
    fitted on (0 without any): the advisor does not extrapolate the cap below it."""
    out = {}
    for f in FITS:
        name, _, gen = f.name.partition(".")
        if name == "tflops_per_watt":
            mine = [_watts(c) for c in cases if f.selects(c)]
            out[f"power_cap_min_watts.{gen}"] = min(mine) if mine else 0.0
    return out


# -- holding out -------------------------------------------------------------------------------------------------


def held_out(cases: list[dict[str, Any]], group_of: Callable[[dict[str, Any]], str]) -> dict[str, dict[str, Any]]:
    """For each group: the constants refitted without its cases, and its cases' ratios predicted with them."""
    out = {}
    for g in sorted({group_of(c) for c in cases}):
        train = [c for c in cases if group_of(c) != g]
        test = [c for c in cases if group_of(c) == g]
        values, _ = fit(train)
        out[g] = {"values": values, "ids": [c["id"] for c in test], "ratios": ratios(test, values)}
    return out


def quantile_band(rs: list[float]) -> tuple[float, float]:
    """The 10th and 90th percentile of ``rs`` (inclusive method; the extremes below 10 ratios)."""
    s = sorted(rs)
    if len(s) < 10:
        return s[0], s[-1]
    dec = statistics.quantiles(s, n=10, method="inclusive")
    return dec[0], dec[-1]


def inside(r: float, band: tuple[float, float]) -> bool:
    return band[0] <= r <= band[1]


def nested_coverage(logo: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per generation: the band from the other generations' held-out ratios, and how many of this generation's
    held-out cases fall inside it (the band checked on runs that shaped neither it nor the constants)."""
    out = {}
    for g, h in logo.items():
        others = [r for k, o in logo.items() if k != g for r in o["ratios"]]
        band = quantile_band(others)
        hits = sum(inside(r, band) for r in h["ratios"])
        out[g] = {"band": band, "inside": hits, "cases": len(h["ratios"])}
    return out


@dataclass
class Report:
    values: dict[str, float]
    used: dict[str, list[str]]
    logo: dict[str, dict[str, Any]]
    loso: dict[str, dict[str, Any]]
    band: tuple[float, float]
    coverage: float  # the lower of the shares of the LOGO and the LOSO held-out ratios inside the band
    coverage_generation: float  # share of the leave-one-generation-out ratios inside the band
    coverage_publication: float  # share of the leave-one-publication-out ratios inside the band
    nested: dict[str, dict[str, Any]]
    cases: int

    @property
    def nested_share(self) -> float:
        hits = sum(n["inside"] for n in self.nested.values())
        return hits / max(1, sum(n["cases"] for n in self.nested.values()))


def run(cases: list[dict[str, Any]] | None = None) -> Report:
    cs = throughput_cases(cases)
    values, used = fit(cs)
    logo = held_out(cs, generation_of)
    loso = held_out(cs, source_of)
    by_gen = [r for h in logo.values() for r in h["ratios"]]
    by_pub = [r for h in loso.values() for r in h["ratios"]]
    (glo, ghi), (slo, shi) = quantile_band(by_gen), quantile_band(by_pub)
    band = (min(glo, slo), max(ghi, shi))  # the worse of the two held-out spreads
    cov_g = sum(inside(r, band) for r in by_gen) / len(by_gen)
    cov_s = sum(inside(r, band) for r in by_pub) / len(by_pub)
    return Report(values, used, logo, loso, band, min(cov_g, cov_s), cov_g, cov_s, nested_coverage(logo), len(cs))


def coverage_by(rep: Report, cases: list[dict[str, Any]], key: Callable[[dict[str, Any]], str]) -> dict[str, str]:
    """Per group of ``key`` (generation, stack): how many of its leave-one-publication-out ratios are inside the
    band, "inside of cases"."""
    ratio = {i: r for h in rep.loso.values() for i, r in zip(h["ids"], h["ratios"], strict=True)}
    out: dict[str, list[int]] = {}
    for c in cases:
        n = out.setdefault(key(c), [0, 0])
        n[0] += inside(ratio[c["id"]], rep.band)
        n[1] += 1
    return {k: f"{a} of {b}" for k, (a, b) in sorted(out.items())}


# -- output --------------------------------------------------------------------------------------------------------


def fitted_toml(rep: Report) -> str:
    """gpuadvisor/advisor/fitted.toml: every fitted parameter, with the runs it is fitted on."""
    lines = [
        "# The advisor's fitted time-model parameters (gpuadvisor/advisor/fitted.py reads them as one FitParams).",
        "# Generated by benchmarks/fit_advisor.py --write from benchmarks/calibration_cases.toml: do not edit. Least",
        "# squares on log(predicted / measured) over the published runs each parameter moves (constants.py says what",
        "# each one is).",
        "",
    ]
    for f in FITS:
        ids = rep.used[f.name]
        text = f"fitted on {len(ids)} {f.on}: {', '.join(ids) if ids else 'none: the prior, ' + f.prior_why}"
        lines += ["# " + part for part in textwrap.wrap(text, 110)]
        lines.append(f"{f.name} = {rep.values[f.name]!r}")
    lines.append("# the lowest board power among the runs each power cap is fitted on (not extrapolated below it)")
    lines += [f"{k} = {v!r}" for k, v in rep.values.items() if k.startswith("power_cap_min_watts.")]
    return "\n".join(lines) + "\n"


def bands(results: list[P.Result]) -> dict[str, Any]:
    """The bands of every kind (the 10th to 90th percentile of the counted cases' ratios, all of them below 10 cases,
    and the worst ones), every case predicted from datasheet rates. No case ran with measured rates, so there is no
    "measured" band; write() replaces the throughput entry with the band of the held-out ratios."""
    out: dict[str, Any] = {}
    for kind in ("throughput", "memory", "kv_cache"):
        # held out: a run a memory or KV-cache constant was chosen on (its `fitted`) does not shape the band
        ratios = sorted(r.ratio for r in P.counted(results) if r.kind == kind and not r.fitted)
        if not ratios:
            continue
        lo, hi = quantile_band(ratios)
        out[kind] = {
            "datasheet": {
                "ratio_low": round(lo, 3),
                "ratio_high": round(hi, 3),
                "worst_low": round(ratios[0], 3),
                "worst_high": round(ratios[-1], 3),
                "cases": len(ratios),
            }
        }
    return out


def bands_toml(b: dict[str, Any]) -> str:
    lines = [
        "# Generated by benchmarks/fit_advisor.py --write from benchmarks/calibration_cases.toml: do not edit.",
        "# predicted / measured over the published runs: ratio_low/high the 10th/90th percentile (all cases below 10),",
        "# worst_low/high the extremes. A prediction v has the band [v / ratio_high, v / ratio_low]. Throughput:",
        "# the ratios of runs predicted by constants fitted without their GPU generation, and without their",
        "# publication (held out; the wider band); memory and KV cache: the ratios of every run no constant was",
        "# chosen on (the rest are counted from first principles).",
        "",
    ]
    for kind, entry in b.items():
        for basis, v in entry.items():
            lines += [f"[bands.{kind}.{basis}]"] + [f"{k} = {json.dumps(x)}" for k, x in v.items()] + [""]
    return "\n".join(lines)


def band_entry(rep: Report) -> dict[str, Any]:
    lo, hi = rep.band
    all_held = sorted(
        [r for h in rep.logo.values() for r in h["ratios"]] + [r for h in rep.loso.values() for r in h["ratios"]]
    )
    return {
        "ratio_low": round(lo, 3),
        "ratio_high": round(hi, 3),
        "worst_low": round(all_held[0], 3),
        "worst_high": round(all_held[-1], 3),
        "cases": rep.cases,
        "coverage_measured": round(rep.coverage, 3),
        "coverage_by_generation": round(rep.coverage_generation, 3),
        "coverage_by_publication": round(rep.coverage_publication, 3),
        "held_out_check": round(rep.nested_share, 3),
        "basis": "held out: each run predicted by constants fitted without its GPU generation, and again without "
        "its publication; the wider of the two bands",
    }


def _summ(rs: list[float]) -> str:
    return f"median {statistics.median(rs):.3f}, {min(rs):.3f}-{max(rs):.3f}"


def report_text(rep: Report) -> str:
    out = [f"fitted on {rep.cases} counted throughput cases:"]
    for f in FITS:
        out.append(f"  {f.name} = {rep.values[f.name]:g}  ({len(rep.used[f.name])} cases: {f.on})")
    for title, groups in (("leave-one-generation-out", rep.logo), ("leave-one-source-out", rep.loso)):
        out.append(
            f"\n{title}: refitted without the group, the group's cases predicted (ratio = predicted / measured):"
        )
        for g, h in groups.items():
            vals = ", ".join(f"{k}={v:g}" for k, v in h["values"].items())
            out.append(f"  {g:28s} {len(h['ratios']):3d} cases  {_summ(h['ratios'])}  [{vals}]")
    lo, hi = rep.band
    out.append(
        f"\nband (the wider of the 10th-90th percentiles of the leave-one-generation-out and leave-one-publication-out "
        f"ratios): x{lo:.3f}-x{hi:.3f}; covers {rep.coverage_generation:.1%} held out by generation, "
        f"{rep.coverage_publication:.1%} held out by publication, of {rep.cases}"
    )
    cs = throughput_cases()
    for title, key in (("generation", generation_of), ("stack", _stack)):
        counts = coverage_by(rep, cs, key)
        out.append(
            f"inside the band, held out by publication, per {title}: "
            + ", ".join(f"{k} {v}" for k, v in counts.items())
        )
    out.append("band checked per generation (made from the other generations' held-out ratios):")
    for g, n in rep.nested.items():
        out.append(f"  {g:10s} x{n['band'][0]:.3f}-x{n['band'][1]:.3f}: {n['inside']} of {n['cases']} inside")
    out.append(f"  all: {rep.nested_share:.1%} of the held-out cases inside the band made without their generation")
    return "\n".join(out)


def write(rep: Report) -> None:
    from gpuadvisor.output import write_atomic

    write_atomic(str(FITTED_FILE), fitted_toml(rep), what="fitted constants")
    out = bands(P.run(fit=FitParams.from_values(rep.values)))
    out["throughput"] = {"datasheet": band_entry(rep)}
    write_atomic(str(BANDS_FILE), bands_toml(out), what="calibration bands")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="write gpuadvisor/advisor/fitted.toml and calibration.toml")
    args = ap.parse_args(argv)
    rep = run()
    print(report_text(rep))
    if args.write:
        write(rep)
        print(f"\nwrote {FITTED_FILE.relative_to(ROOT)} and {BANDS_FILE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
