"""The plan as text: one ranked table, the recommendation, then why each build is where it is."""

from __future__ import annotations

from typing import Any

from gpuadvisor.plan import Plan
from gpuadvisor.plan.evaluate import Row


def _num(v: float | None, fmt: str = ",.0f") -> str:
    return "-" if v is None else format(v, fmt)


def _duration(hours: float | None) -> str:
    if hours is None:
        return "-"
    if hours < 1:
        return f"{hours * 60:.0f} min"
    if hours < 48:
        return f"{hours:.1f} h"
    return f"{hours / 24:.1f} d"


def _speed(r: Row) -> str:
    if r.tokens_per_second is None:
        return "-"
    s = _num(r.tokens_per_second)
    if r.band:
        s += f" ({_num(r.band[0])}-{_num(r.band[1])})"
    return s


def _price(r: Row) -> str:
    c = r.cost
    if c is None:
        return "-"
    if r.build.rent:
        return f"${c.rent_usd_per_hour:,.2f}/h" if c.rent_usd_per_hour else "unknown"
    return f"${c.purchase_usd:,.0f}" if c.purchase_usd is not None else "unknown"


def _fits(r: Row) -> str:
    if not r.buildable:
        return "cannot build"
    if not r.fits:
        return "no"
    if r.fits_circuit_reason:
        return "circuit"
    return "yes" if r.meets_need else "too slow"


def _per_kw(r: Row) -> str:
    if not (r.tokens_per_second and r.cost and r.cost.power_w and not r.build.rent):
        return "-"
    return _num(r.tokens_per_second / (r.cost.power_w / 1000))


def per_kusd(r: Row) -> str:
    """Performance per dollar: tokens/s per US$1,000 of purchase price (bought builds with a price)."""
    if not (r.tokens_per_second and r.cost and r.cost.purchase_usd and not r.build.rent):
        return "-"
    return _num(r.tokens_per_second / (r.cost.purchase_usd / 1000), ",.1f")


def _worst(r: Row) -> str:
    sev = [f for f in r.findings if f["severity"] in ("fail", "warn")]
    if not sev:
        return "-"
    codes = sorted({f["code"] for f in sev})
    return ",".join(codes[:3]) + (f" +{len(codes) - 3}" if len(codes) > 3 else "")


def render_text(plan: Plan, width: int | None = None) -> str:
    """The plan fitted to ``width`` (default: the terminal's; a table too wide is split into column groups that
    repeat the build's name)."""
    from gpuadvisor.render.text.width import fit_lines, fit_table, term_width

    width = width or term_width()
    lines = _heading(plan)
    head, table = _table(plan)
    lines += fit_table([[str(c) for c in row] for row in table], head, width, indent="", keep=2)
    lines += ["", "Recommendation:"] + [f"  - {s}" for s in plan.recommendation]
    lines += ["", "Why:"]
    for r in plan.rows:
        why = _why(r)
        if why:
            lines.append(f"  {r.build.name}:")
            lines += [f"    - {w}" for w in why]
    lines += _stalls(plan)
    sweeps = list(dict.fromkeys(s for r in plan.rows if r.circuit is not None for s in r.circuit.sources))
    if sweeps:
        lines += ["", "Power-limit sweeps behind the caps' speed costs:"] + [f"  - {s}" for s in sweeps]
    lines += ["", "Assumptions:"] + [f"  - {a}" for a in plan.assumptions]
    if plan.calibration:
        lines.append(f"  - calibrated from {plan.calibration['source']}: {plan.calibration.get('compute_basis') or ''}")
        lines += [f"  - {x}" for x in plan.calibration.get("notes", [])]
    return "\n".join(fit_lines(lines, width)) + "\n"


def _heading(plan: Plan) -> list[str]:
    """What is planned (model, task, tokens, budget), the options given and the ownership."""
    n = plan.need
    what = {
        "inference": f"serve, context {n.context or 'default'}, {n.concurrency or 1} concurrent",
        "qlora": "QLoRA fine-tune",
        "lora": "LoRA fine-tune",
        "full": "full fine-tune",
        "train": "training",
    }[n.task]
    lines = [
        f"Plan: {plan.model}, {what}"
        + (f", {n.tokens:.3g} tokens" if n.tokens else "")
        + (f", budget US${n.budget_usd:,.0f}" if n.budget_usd else "")
        + " (every figure predicted)"
    ]
    flag = {"weight_quant": "weights"}
    derived = {"quantization"}  # --weights, as the advisor's serving model names it
    opts = {flag.get(k, k).replace("_", "-"): v for k, v in plan.options.items() if k not in derived}
    if opts:
        lines.append("Options: " + ", ".join(f"--{k} {v}" for k, v in opts.items()))
    lines += [f"Ownership: {plan.ownership.label()}", ""]
    return lines


def _table(plan: Plan) -> tuple[list[str], list[list[Any]]]:
    """The ranking table: its header and one row per build."""
    n = plan.need
    serving = n.task == "inference"
    head = [
        "#",
        "build",
        "fits",
        "pick",
        "out tok/s" if serving else "tokens/s (range)",
        "eff.",
        "time" if n.tokens else "",
        "price",
        "kW",
        "$/1M tok",
        "tok/s/kW",
        "tok/s/$1k",
        "findings",
    ]
    table = []
    for r in plan.rows:
        table.append(
            [
                r.rank if r.rank is not None else "-",
                r.build.name,
                _fits(r),
                (r.pick or "-") if r.fits else "-",
                _speed(r),
                f"{r.efficiency:.0%}" if r.efficiency else "-",
                _duration(r.job.hours if r.job else None) if n.tokens else "",
                _price(r),
                f"{r.cost.power_w / 1000:.1f}" if r.cost and not r.build.rent else "-",
                _num(r.job.usd_per_million_tokens if r.job else None, ",.2f"),
                _per_kw(r),
                per_kusd(r),
                _worst(r),
            ]
        )
    return head, table


def _why(r: Row) -> list[str]:
    """Why a build ranks where it does: what stops it, its notes, its findings, its price caveats, its ties."""
    why: list[str] = []
    if not r.buildable:
        why += r.problems
    elif not r.fits:
        why.append(r.reason or "does not fit")
    elif not r.meets_need and r.need_reason:
        why.append(r.need_reason)
    why += r.layout_notes
    why += r.sensitivity
    why += [
        f"{f['code']} {f['severity']}: {f['message']}"
        + (f". Fix: {f['fix']}" if f.get("fix") and f["severity"] == "fail" else "")
        for f in r.findings
        if f["severity"] in ("fail", "warn")
    ]
    if r.cost and r.cost.purchase_unknown:
        why.append(f"price: {r.cost.purchase_unknown}")
    if r.cost:
        why += r.cost.stale
    if r.circuit is not None and not r.circuit.fits and r.circuit.cap_w is not None:
        why.append(f"circuit: {r.circuit.text}")
    why += _horizon(r)
    if r.tie_with:
        why.append(f"a tie with {', '.join(r.tie_with)}: their predicted ranges overlap")
    return why


def _horizon(r: Row) -> list[str]:
    """The break-even horizon of an owned build: after how many months, and above how many hours a day, owning
    beats renting the same GPUs."""
    j = r.job
    if r.build.rent or j is None or j.break_even_hours_per_day is None:
        return []
    months = f"after {j.break_even_months:g} months" if j.break_even_months is not None else "not within ten years"
    h = j.break_even_hours_per_day
    return [
        f"break-even against renting the same GPUs: {months} at the stated hours a day; above {h:.1f} h/day over "
        "the stated months" + (" (never: more than 24 h/day)" if h > 24 else "")
    ]


def _stalls(plan: Plan) -> list[str]:
    """The checkpoint stall on each build's data drives (a training plan with storage)."""
    lines: list[str] = []
    stalls = [r for r in plan.rows if r.storage is not None]
    if stalls:
        lines += ["", "Checkpoint stall on the build's data drives:"]
        bare = [r.build.name for r in stalls if r.build.storage is None]
        if bare:
            lines.append(
                f"  - {', '.join(bare)}: checkpoint stall not counted: no [storage] drives named (assumed none)"
            )
        for r in stalls:
            st = r.storage
            if r.build.storage is None:
                continue
            text = st.note
            if st.counted and st.hours_with_stall is not None:
                text = (
                    f"time to train {st.train_hours:,.1f} h of steps + {(st.stall_seconds or 0) / 3600:,.2f} h of "
                    f"saves = {st.hours_with_stall:,.1f} h; {text}"
                )
            lines.append(f"  - {r.build.name}{f' ({st.storage})' if st.storage else ''}: {text}")
    return lines
