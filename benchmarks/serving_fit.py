"""Fit the serving model's constants on published serving benchmarks and derive its error bands.

    .venv/bin/python benchmarks/serving_fit.py            # report: fit, per-case ratios, leave-one-source-out
    .venv/bin/python benchmarks/serving_fit.py --write    # also write gpuadvisor/advisor/serving_fit.toml

The constants (decode bandwidth fraction, prefill compute fraction, per-engine step overhead) minimise the sum of
squared log(predicted / measured) over every case's output tokens/s, inter-token latency and time to first token
(TTFT weighted half: it carries queueing the model only approximates). The bands come from a leave-one-source-out
refit: each publication is held out in turn, the constants refitted on the others, and the held-out cases
predicted; the band of a metric is the 10th-90th percentile of those held-out ratios (all of them below 10
cases), and its coverage is the share of held-out ratios inside it, measured, not assumed.
"""

from __future__ import annotations

import argparse
import math
import sys
import tomllib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpuadvisor import catalog  # noqa: E402
from gpuadvisor.advisor import serving as S  # noqa: E402
from gpuadvisor.advisor.architecture import architecture_from_spec  # noqa: E402

CASES = ROOT / "benchmarks" / "serving_cases.toml"
METRICS = {
    "output_tokens_per_second": ("output_tokens_per_second", 1.0, 1.0),
    "itl_s": ("itl_ms", 1e-3, 1.0),
    "ttft_s": ("ttft_ms", 1e-3, 0.5),
}
GRID = {
    "decode_bandwidth_fraction": (0.3, 1.0),
    "prefill_compute_fraction": (0.15, 0.95),
    "prefill_overlap": (0.0, 1.0),
}
OVERHEAD_RANGE = (0.0, 0.015)


@dataclass
class Case:
    row: dict[str, Any]

    @property
    def source(self) -> str:
        """The publication: sibling tables of one publication are held out together."""
        return str(self.row.get("publication", self.row["source_id"]))

    @property
    def held_out(self) -> bool:
        """Kept out of every fit: the check on a publication the constants never saw."""
        return bool(self.row.get("held_out", False))

    def measured(self, metric: str) -> float | None:
        key, scale, _ = METRICS[metric]
        v = self.row.get(key)
        return None if v is None else float(v) * scale

    @cached_property
    def model(self) -> tuple[Any, S.GpuRates]:
        """The case's architecture and GPU rates: neither depends on the constants, so a fit's hundreds of
        thousands of predictions build them once (and the architecture's counted parameters with them)."""
        r = self.row
        spec = catalog.find_model(r["model"])
        gpu = catalog.gpu_by_id(r["gpu"])
        assert spec is not None and gpu is not None, r["id"]
        nvlink = int(r["tp"]) == 1 or gpu.nvlink_domain >= int(r["tp"])
        return architecture_from_spec(spec), S.rates_from_spec(gpu, nvlink=nvlink)

    def predict(self, k: S.ServingConstants) -> S.ServingResult:
        r = self.row
        arch, rates = self.model
        return S.predict(
            arch,
            arch.params,
            rates,
            tp=int(r["tp"]),
            dtype=r["dtype"],
            quantization=r["quantization"],
            kv_cache_dtype=r["kv_cache_dtype"],
            concurrency=int(r["concurrency"]),
            input_len=int(r["input_len"]),
            output_len=int(r["output_len"]),
            engine=r["engine"],
            gpu_memory_utilization=float(r["gpu_memory_utilization"]),
            max_num_seqs=r.get("max_num_seqs"),
            constants=k,
            with_band=False,
            offline=bool(r.get("offline", False)),
        )


def load_cases(path: Path = CASES, held_out: bool = False) -> list[Case]:
    """The cases the fit and its bands use; held_out=True: the publications kept out of every fit instead."""
    cases = [Case(r) for r in tomllib.loads(path.read_text(encoding="utf-8"))["serving"]]
    return [c for c in cases if c.held_out == held_out]


def ratios(cases: list[Case], k: S.ServingConstants) -> list[tuple[Case, str, float]]:
    out = []
    for c in cases:
        res = c.predict(k)
        for m in METRICS:
            meas = c.measured(m)
            if meas:
                out.append((c, m, getattr(res, m) / meas))
    return out


def loss(cases: list[Case], k: S.ServingConstants) -> float:
    return sum(METRICS[m][2] * math.log(r) ** 2 for _, m, r in ratios(cases, k))


def _scan(f: Any, lo: float, hi: float, steps: int = 24, rounds: int = 3) -> float:
    """Minimise f on [lo, hi]: a grid, then finer grids around the best point."""
    best = lo
    for _ in range(rounds):
        xs = [lo + (hi - lo) * i / steps for i in range(steps + 1)]
        best = min(xs, key=f)
        step = (hi - lo) / steps
        lo, hi = max(lo, best - step), min(hi, best + step)
    return best


def fit(cases: list[Case]) -> S.ServingConstants:
    """Coordinate descent over the constants (each engine's overhead only where a case of that engine is)."""
    engines = sorted({c.row["engine"] for c in cases})
    k = S.ServingConstants(0.75, 0.5, {e: 0.002 for e in engines}, 0.5)
    for _ in range(4):
        for name, (lo, hi) in GRID.items():
            v = _scan(lambda x, n=name, k0=k: loss(cases, S.with_constants(k0, **{n: x})), lo, hi)
            k = S.with_constants(k, **{name: v})
        for e in engines:

            def f(x: float, e: str = e, k0: S.ServingConstants = k) -> float:
                return loss(cases, S.with_constants(k0, step_overhead_s={**k0.step_overhead_s, e: x}))

            k = S.with_constants(k, step_overhead_s={**k.step_overhead_s, e: _scan(f, *OVERHEAD_RANGE)})
    return k


def percentile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    pos = (len(s) - 1) * q
    i = int(pos)
    return s[i] if i + 1 >= len(s) else s[i] + (s[i + 1] - s[i]) * (pos - i)


def leave_one_source_out(cases: list[Case]) -> list[tuple[Case, str, float]]:
    """Each publication held out in turn (its sibling tables with it), the constants refitted on the others."""
    held: list[tuple[Case, str, float]] = []
    for src in sorted({c.source for c in cases}):
        train = [c for c in cases if c.source != src]
        test = [c for c in cases if c.source == src]
        held += ratios(test, fit(train))
    return held


def held_by_engine(held: list[tuple[Case, str, float]]) -> dict[str, list[float]]:
    """The held-out output tokens/s ratios of each engine's runs."""
    out: dict[str, list[float]] = {}
    for c, m, r in held:
        if m == "output_tokens_per_second":
            out.setdefault(str(c.row["engine"]), []).append(r)
    return out


def leave_one_generation_out(cases: list[Case]) -> dict[str, list[tuple[str, float]]]:
    """Held-out output tokens/s ratios with every case of one GPU generation left out of the fit (reported, not
    used for the bands: with one generation per engine here, it also removes the held-out engine's overhead)."""

    def gen(c: Case) -> str:
        spec = catalog.gpu_by_id(c.row["gpu"])
        return spec.architecture if spec else "?"

    out = {}
    for g in sorted({gen(c) for c in cases}):
        k = fit([c for c in cases if gen(c) != g])
        out[g] = [
            (c.row["id"], r)
            for c, m, r in ratios([c for c in cases if gen(c) == g], k)
            if m == "output_tokens_per_second"
        ]
    return out


def bands(held: list[tuple[Case, str, float]]) -> dict[str, dict[str, Any]]:
    out = {}
    for m in METRICS:
        rs = [r for _, mm, r in held if mm == m]
        if not rs:
            continue
        lo, hi = (percentile(rs, 0.1), percentile(rs, 0.9)) if len(rs) >= 10 else (min(rs), max(rs))
        inside = sum(1 for r in rs if lo - 1e-12 <= r <= hi + 1e-12) / len(rs)
        out[m] = {
            "ratio_low": round(lo, 3),
            "ratio_high": round(hi, 3),
            "median": round(percentile(rs, 0.5), 3),
            "worst_low": round(min(rs), 3),
            "worst_high": round(max(rs), 3),
            "cases": len(rs),
            "sources": len({c.source for c, mm, _ in held if mm == m}),
            "coverage": round(inside, 3),
        }
    # a band never excludes the prediction itself, nor ends on it (0.1 %: the figure still inside once rounded)
    for b in out.values():
        b["ratio_low"] = min(b["ratio_low"], 0.999)
        b["ratio_high"] = max(b["ratio_high"], 1.001)
    return out


def write(k: S.ServingConstants, b: dict[str, dict[str, Any]], path: Path = S.FIT_FILE) -> None:
    lines = [
        "# Generated by benchmarks/serving_fit.py --write from benchmarks/serving_cases.toml: do not edit.",
        "# constants: the fit on every case not held out; bands: predicted / measured of each case when its",
        "# publication was held out and the constants refitted on the others (10th-90th percentile, all cases",
        "# below 10); coverage: the share of those held-out cases inside the band.",
        "",
        "[constants]",
        f"decode_bandwidth_fraction = {k.decode_bandwidth_fraction:.4f}",
        f"prefill_compute_fraction = {k.prefill_compute_fraction:.4f}",
        f"prefill_overlap = {k.prefill_overlap:.4f}",
        "",
        "[constants.step_overhead_s]",
    ]
    lines += [f"{e} = {v:.6f}" for e, v in sorted(k.step_overhead_s.items())]
    for m, v in b.items():
        lines += ["", f"[bands.{m}]"] + [f"{key} = {val}" for key, val in v.items()]
    # the publications kept out of every fit: predicted / measured output tokens/s under these constants
    for e, rs in sorted(held_out_ratios(k).items()):
        vals = [r for _, r in rs]
        lines += [
            "",
            f"[held_out.{e}]",
            f"median = {percentile(vals, 0.5):.3f}",
            f"low = {min(vals):.3f}",
            f"high = {max(vals):.3f}",
            f"runs = {len(vals)}",
        ]
    tmp = path.with_suffix(".tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tmp.replace(path)


def held_out_ratios(k: S.ServingConstants) -> dict[str, list[tuple[str, float]]]:
    """Output tokens/s ratios of the held-out publications under the shipped fit, by engine."""
    out: dict[str, list[tuple[str, float]]] = {}
    for c, m, r in ratios(load_cases(held_out=True), k):
        if m == "output_tokens_per_second":
            out.setdefault(str(c.row["engine"]), []).append((c.row["id"], r))
    return out


def report_held_out(k: S.ServingConstants) -> None:
    for e, rs in sorted(held_out_ratios(k).items()):
        vals = [r for _, r in rs]
        print(
            f"held-out publication, engine {e}: output tokens/s ratio median {percentile(vals, 0.5):.3f}, "
            f"{min(vals):.3f}-{max(vals):.3f} over {len(vals)} runs"
        )
        for i, r in rs:
            print(f"  {i:40} {r:6.3f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="write gpuadvisor/advisor/serving_fit.toml")
    args = ap.parse_args()
    cases = load_cases()
    k = fit(cases)
    print(
        f"fit on {len(cases)} cases: decode bandwidth {k.decode_bandwidth_fraction:.3f}, prefill compute "
        f"{k.prefill_compute_fraction:.3f}, step overhead "
        + ", ".join(f"{e} {v * 1e3:.2f} ms" for e, v in sorted(k.step_overhead_s.items()))
    )
    held = leave_one_source_out(cases)
    full = {(c.row["id"], m): r for c, m, r in ratios(cases, k)}
    print(f"{'case':24} {'metric':26} {'fit':>6} {'held-out':>8}")
    for c, m, r in held:
        print(f"{c.row['id']:24} {m:26} {full[(c.row['id'], m)]:6.3f} {r:8.3f}")
    b = bands(held)
    for m, v in b.items():
        print(f"band {m}: {v}")
    for e, rs in sorted(held_by_engine(held).items()):
        print(
            f"engine {e}, its source held out: output tokens/s ratio median {percentile(rs, 0.5):.3f}, "
            f"{min(rs):.3f}-{max(rs):.3f} over {len(rs)} runs"
        )
    for g, rs in leave_one_generation_out(cases).items():
        vals = [r for _, r in rs]
        print(f"generation {g} held out: output tokens/s ratio {min(vals):.3f}-{max(vals):.3f} over {len(vals)} runs")
    report_held_out(k)
    if args.write:
        write(k, b)
        print(f"wrote {S.FIT_FILE}")
    # the goal: output tokens/s within 0.75-1.33 of every published run at concurrency 1-64, held out
    bad = [
        (c.row["id"], round(r, 3))
        for c, m, r in held
        if m == "output_tokens_per_second" and c.row["concurrency"] <= 64 and not 0.75 <= r <= 1.33
    ]
    print(
        "held-out output tokens/s at concurrency 1-64: "
        + (f"outside 0.75-1.33: {bad}" if bad else "every run within 0.75-1.33")
    )
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
