#!/usr/bin/env python3
"""How close the advisor's predictions are to published measurements of real runs.

Runs every case of benchmarks/calibration_cases.toml through the advisor's own functions (calibration_cases.py: the
rig built from the GPU catalog as `advise` builds a planned rig, the layout the source names), and prints per case
the prediction, the measurement and their ratio, then per kind of figure the median and the worst ratios, against
the goals:

    throughput: median 0.9-1.1, every case 0.67-1.5
    memory:     median 0.9-1.1, every case 0.75-1.33
    kv_cache:   every case 0.95-1.05 (for the vLLM engine version the case names)

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
