#!/usr/bin/env python3
"""How close the advisor's predictions are to published measurements of real runs.

Runs every case of benchmarks/calibration_cases.toml through the advisor's own functions (calibration_cases.py: the
rig built from the GPU catalog as `advise` builds a planned rig, the layout the source names), and prints per case
the prediction, the measurement and their ratio, then per kind of figure the median and the worst ratios, against
the goals:

    throughput: median 0.9-1.1, every case 0.67-1.5
    memory:     median 0.9-1.1, every case 0.75-1.33
    kv_cache:   every case 0.95-1.05 (for the vLLM engine version the case names)
    serving:    output tokens/s per engine median 0.9-1.1, every run 0.75-1.33; llama.cpp decode 0.8-1.25
                (benchmarks/serving_cases.toml); at least 70 % of every case inside the band the advisor prints

and the throughput goals per training stack (eager PyTorch, torch.compile, Megatron-Core + Transformer Engine,
DeepSpeed, JAX). The time model's constants are fitted, refitted per held-out GPU generation and publication, and
the shipped bands derived, by benchmarks/fit_advisor.py (`--write` regenerates gpuadvisor/advisor/fitted.toml and
calibration.toml); this script prints that report too (--refit).

    .venv/bin/python benchmarks/advisor_accuracy.py             # the table; exit 1 when a goal fails
    .venv/bin/python benchmarks/advisor_accuracy.py --refit     # also the held-out refits (benchmarks/fit_advisor.py)
    .venv/bin/python benchmarks/advisor_accuracy.py --markdown  # the table as Markdown (benchmarks/README.md)
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from calibration_cases import Result, counted, run  # noqa: E402

GOALS = {
    "throughput": {"median": (0.9, 1.1), "each": (0.67, 1.5)},
    "memory": {"median": (0.9, 1.1), "each": (0.75, 1.33)},
    "kv_cache": {"median": (0.95, 1.05), "each": (0.95, 1.05)},
    "formula": {"median": (0.999, 1.001), "each": (0.995, 1.005)},
}

# -- summarising ------------------------------------------------------------------------------------------------------


def stats(results: list[Result]) -> dict[str, Any] | None:
    if not results:
        return None
    ratios = sorted(r.ratio for r in results)
    return {"n": len(ratios), "median": statistics.median(ratios), "min": ratios[0], "max": ratios[-1]}


def goal_ok(kind: str, s: dict[str, Any] | None) -> bool:
    if s is None:
        return True
    g = GOALS[kind]
    return g["median"][0] <= s["median"] <= g["median"][1] and g["each"][0] <= s["min"] and s["max"] <= g["each"][1]


def summary(results: list[Result]) -> dict[str, dict[str, Any]]:
    out = {}
    results = counted(results)
    for kind in GOALS:
        s = stats([r for r in results if r.kind == kind])
        if s:
            out[kind] = {**s, "ok": goal_ok(kind, s)}
    return out


def per_stack(results: list[Result]) -> dict[str, dict[str, Any]]:
    """The throughput goals per training stack (the median of each stack's runs 0.9-1.1, each run 0.67-1.5)."""
    out = {}
    rs = [r for r in counted(results) if r.kind == "throughput"]
    for stack in sorted({r.stack for r in rs}):
        s = stats([r for r in rs if r.stack == stack])
        if s:
            out[stack] = {**s, "ok": goal_ok("throughput", s)}
    return out


# -- printing ----------------------------------------------------------------------------------------------------


def fmt(x: float) -> str:
    if x >= 1000:
        return f"{x:,.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.3g}" if x < 1 else f"{x:.2f}"


def table(results: list[Result], markdown: bool) -> str:
    rows = [
        (
            r.id + (" (excl.)" if r.excluded else ""),
            r.kind,
            r.generation,
            r.metric,
            fmt(r.measured),
            fmt(r.predicted),
            f"{r.ratio:.3f}",
            r.setting[:90],
        )
        for r in results
    ]
    head = ("id", "kind", "GPU gen.", "metric", "measured", "predicted", "ratio", "setting")
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(row) + " |" for row in rows]
        return "\n".join(out)
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows, strict=False)]
    return "\n".join("  ".join(str(x).ljust(wd) for x, wd in zip(row, widths, strict=False)) for row in [head, *rows])


def report(results: list[Result], markdown: bool = False) -> str:
    lines = [table(results, markdown), ""]
    for r in results:
        if r.excluded:
            lines.append(f"excluded from the goals: {r.id}: {r.excluded}")
    lines.append("")
    summ = summary(results)
    sep = "| " if markdown else ""
    if markdown:
        lines += [
            "| kind | cases | median | worst low | worst high | goal (median; every case) | met |",
            "|---|---|---|---|---|---|---|",
        ]
    else:
        lines.append("per kind (ratio = predicted / measured):")
    for kind, s in summ.items():
        g = GOALS[kind]
        goal = f"{g['median'][0]}-{g['median'][1]}; {g['each'][0]}-{g['each'][1]}"
        cells = [
            kind,
            str(s["n"]),
            f"{s['median']:.3f}",
            f"{s['min']:.3f}",
            f"{s['max']:.3f}",
            goal,
            "yes" if s["ok"] else "NO",
        ]
        lines.append(sep + (" | ".join(cells) + " |" if markdown else "  " + "  ".join(cells)))
    lines.append("")
    lines.append("throughput per training stack:")
    if markdown:
        lines += ["", "| stack | cases | median | worst low | worst high | met |", "|---|---|---|---|---|---|"]
    for stack, s in per_stack(results).items():
        cells = [
            stack,
            str(s["n"]),
            f"{s['median']:.3f}",
            f"{s['min']:.3f}",
            f"{s['max']:.3f}",
            "yes" if s["ok"] else "NO",
        ]
        lines.append(sep + (" | ".join(cells) + " |" if markdown else "  " + "  ".join(cells)))
    return "\n".join(lines)


def _series_root(r: Result, by_id: dict[str, dict[str, Any]]) -> str:
    """The first run of a scaling series (the case the others are ``like``)."""
    case = by_id[r.id]
    while "like" in case and by_id[case["like"]].get("nodes") is not None:
        case = by_id[case["like"]]
    return str(case["id"])


def held_out_publications(results: list[Result]) -> tuple[list[str], bool]:
    """The publications kept out of every fit: each one's ratios (each within the throughput goal's 0.67-1.5), the
    share inside the shipped band, and for a multi-node series the per-GPU rate measured and predicted at each node
    count, each relative to the series' first run (the fall with scale, published and predicted)."""
    from calibration_cases import load_cases

    from gpuadvisor.advisor.calibration import band

    by_id = {c["id"]: c for c in load_cases()}
    held = [r for r in counted(results) if r.held_out and r.kind == "throughput"]
    lines: list[str] = []
    ok = True
    if not held:
        return lines, ok
    lines.append("publications kept out of every fit (throughput; ratio = predicted / measured):")
    for pub in sorted({r.publication for r in held}):
        rs = [r for r in held if r.publication == pub]
        b = band("throughput", 1.0)
        inside = sum(1 for r in rs if b is not None and b.ratio_low <= r.ratio <= b.ratio_high)
        s = stats(rs)
        assert s is not None
        lo, hi = GOALS["throughput"]["each"]
        good = all(lo <= r.ratio <= hi for r in rs)
        ok = ok and good
        lines.append(
            f"  {pub}: {s['n']} runs, median {s['median']:.3f}, {s['min']:.3f}-{s['max']:.3f}, "
            f"{inside} of {len(rs)} inside the shipped band"
            + (f" x{b.ratio_low:.3f}-x{b.ratio_high:.3f}" if b else "")
            + ("" if good else f"  (a run outside {lo}-{hi})")
        )
        for root in dict.fromkeys(_series_root(r, by_id) for r in rs):
            series = sorted(
                (r for r in rs if _series_root(r, by_id) == root), key=lambda r: by_id[r.id].get("nodes", 1)
            )
            if len(series) < 2:
                continue
            lines.append(f"    per-GPU rate by node count ({root} series; measured -> predicted, ratio):")
            m0, p0 = None, None
            for r in series:
                c = by_id[r.id]
                gpus = c.get("gpus_per_node", 1) * c.get("nodes", 1)
                per = 1.0 if r.metric.endswith("_per_gpu") else 1.0 / gpus
                m, p = r.measured * per, r.predicted * per
                m0, p0 = m0 or m, p0 or p
                lines.append(
                    f"      {c.get('nodes', 1):4d} nodes: {m:10.1f} -> {p:10.1f}  {r.ratio:.3f}  "
                    f"(vs the first: published {m / m0:.3f}, predicted {p / p0:.3f})"
                )
    return lines, ok


SERVING_GOALS = {"median": (0.9, 1.1), "each": (0.75, 1.33), "llamacpp_decode": (0.8, 1.25), "inside_band": 0.7}


def serving_and_bands(results: list[Result]) -> tuple[list[str], bool]:
    """The serving goals (benchmarks/serving_cases.toml under the shipped constants, the publications held out of
    every fit included): output tokens/s per engine, median 0.9-1.1 and each run 0.75-1.33; llama.cpp's decode
    (inter-token latency) 0.8-1.25; and the share of every case, training and serving, inside the band the advisor
    prints (at least 70 %)."""
    import serving_fit

    from gpuadvisor.advisor import serving as SV
    from gpuadvisor.advisor.calibration import band, bands

    k = SV.fitted_constants()
    cases = serving_fit.load_cases() + serving_fit.load_cases(held_out=True)
    rs = serving_fit.ratios(cases, k)
    lines = ["serving (output tokens/s, ratio = predicted / measured, shipped constants, held-out publications in):"]
    ok = True
    lo, hi = SERVING_GOALS["each"]
    for engine in sorted({str(c.row["engine"]) for c, _, _ in rs}):
        vals = [r for c, m, r in rs if m == "output_tokens_per_second" and c.row["engine"] == engine]
        if not vals:
            continue
        med = statistics.median(vals)
        good = SERVING_GOALS["median"][0] <= med <= SERVING_GOALS["median"][1] and lo <= min(vals) <= max(vals) <= hi
        ok = ok and good
        lines.append(
            f"  {engine:9s} {len(vals):3d} runs  median {med:.3f}  {min(vals):.3f}-{max(vals):.3f}  "
            + ("yes" if good else "NO")
        )
    dlo, dhi = SERVING_GOALS["llamacpp_decode"]
    itl = [r for c, m, r in rs if m == "itl_s" and c.row["engine"] == "llamacpp"]
    if itl:
        good = all(dlo <= r <= dhi for r in itl)
        ok = ok and good
        lines.append(
            f"  llama.cpp decode (inter-token latency) {len(itl)} runs: "
            + ", ".join(f"{r:.3f}" for r in itl)
            + f"  goal {dlo}-{dhi}: "
            + ("yes" if good else "NO")
        )
    # inside the printed band: a prediction v prints [v / ratio_high, v / ratio_low], so a case is inside when its
    # ratio lies in [ratio_low, ratio_high]
    inside, total = 0, 0
    per: list[str] = []
    for kind in ("throughput", "memory", "kv_cache"):
        b = band(kind, 1.0)
        mine = [r for r in counted(results) if r.kind == kind]
        if b is None or not mine:
            continue
        n = sum(1 for r in mine if b.ratio_low <= r.ratio <= b.ratio_high)
        inside, total = inside + n, total + len(mine)
        per.append(f"{kind} {n} of {len(mine)}")
    sb = SV.serving_band("output_tokens_per_second", 1.0)
    if sb is not None:
        vals = [r for _, m, r in rs if m == "output_tokens_per_second"]
        n = sum(1 for r in vals if sb.ratio_low <= r <= sb.ratio_high)
        inside, total = inside + n, total + len(vals)
        per.append(f"serving output tokens/s {n} of {len(vals)}")
    shipped = bands().get("throughput", {}).get("datasheet", {})
    if shipped:
        lines.append(
            f"training band x{shipped['ratio_low']}-x{shipped['ratio_high']}: covers "
            f"{float(shipped['coverage_by_publication']):.1%} of {shipped['cases']} runs held out by publication, "
            f"{float(shipped['coverage_by_generation']):.1%} held out by generation (benchmarks/fit_advisor.py)"
        )
    share = inside / max(1, total)
    good = share >= SERVING_GOALS["inside_band"]
    ok = ok and good
    lines.append(
        f"inside the printed band: {inside} of {total} ({share:.1%}; "
        + ", ".join(per)
        + ")  goal >= 70 %: "
        + ("yes" if good else "NO")
    )
    return lines, ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    ap.add_argument(
        "--refit", action="store_true", help="also refit per held-out generation and source (fit_advisor.py)"
    )
    args = ap.parse_args(argv)
    results = run()
    print(report(results, args.markdown))
    ok = all(s["ok"] for s in summary(results).values()) and all(s["ok"] for s in per_stack(results).values())
    held_lines, held_ok = held_out_publications(results)
    print("\n" + "\n".join(held_lines))
    serving_lines, serving_ok = serving_and_bands(results)
    print("\n" + "\n".join(serving_lines))
    ok = ok and held_ok and serving_ok
    if args.refit:
        import fit_advisor

        rep = fit_advisor.run()
        print("\n" + fit_advisor.report_text(rep))
        ok = ok and rep.nested_share >= fit_advisor.HELD_OUT_GOAL
    if not ok:
        print("\nGOAL NOT MET", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
