"""The bandwidth section of the report: the measurements table (P2P pairs summarised), the busbw charts, the P2P
heat maps and the host<->device bars, each with its provenance."""

from __future__ import annotations

from typing import Any

from gpuadvisor.facts import Measurement, Rig

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall", "send_recv")
COPIES = ("h2d", "d2h")


def _nothing_measured(m: Measurement) -> bool:
    """A record that holds no number: skipped, or failed before its first result."""
    return m.value_gbps is None and m.latency_us is None and not m.rows and m.status != "ok"


def _m_prov(rig: Rig, m: Measurement) -> tuple[str, str]:
    """(provenance, short detail) for a badge: "measured", "nccl · 8 ranks"; the method goes in the caption.

    A record with no number (skipped, or failed before any result) is "not measured", whatever its source: a
    badge that says "measured" beside an empty row would read as a result.
    """
    if _nothing_measured(m):
        return "not measured", ""
    bits = []
    if m.backend:
        bits.append(m.backend)
    if m.world_size and m.world_size > 1:
        bits.append(f"{m.world_size} ranks")
    return m.provenance, " · ".join(bits)


def _methods(ms: list[Measurement]) -> list[str]:
    out: list[str] = []
    for m in ms:
        if m.method and m.method not in out:
            out.append(m.method)
    return out


def _m_row(rig: Rig, m: Measurement) -> dict[str, Any]:
    if m.kind == "matmul":  # bench --compute: TFLOP/s against the datasheet dense peak, in the same columns
        return {
            **_m_row(rig, Measurement(kind="", status=m.status, error=m.error, ratio=m.ratio)),
            "m": m,
            "kind": f"matmul {m.dtype or ''} {m.shape or ''} (TFLOP/s)",
            "gpus": ", ".join(str(g) for g in m.gpus) or "cpu",
            "value": f"{m.value_tflops:.2f}" if m.value_tflops is not None else "—",
            "expected": f"{m.expected_tflops:.1f}" if m.expected_tflops is not None else "—",
            "prov": _m_prov(rig, m),
        }
    return {
        "m": m,
        "kind": m.kind.replace("_", " "),
        "gpus": ", ".join(str(g) for g in m.gpus) or "—",
        "value": f"{m.value_gbps:.2f}" if m.value_gbps is not None else "—",
        "latency": f"{m.latency_us:.2f}" if m.latency_us is not None else "",
        "expected": f"{m.expected_gbps:.2f}" if m.expected_gbps is not None else "—",
        "ratio": f"{m.ratio:.0%}" if m.ratio is not None else "—",
        "status": m.status + (f": {m.error}" if m.error else ""),
        "prov": _m_prov(rig, m),
        "css": _status_css(m.status),
    }


def _status_css(status: str) -> str:
    return "" if status == "ok" else ("warn" if status in ("partial", "skipped") else "fail")


def _span(values: list[float], nd: int = 2) -> str:
    if not values:
        return "—"
    lo, hi = min(values), max(values)
    return f"{lo:.{nd}f}" if abs(hi - lo) < 10**-nd else f"{lo:.{nd}f} – {hi:.{nd}f}"


def _pair_summary(rig: Rig, group: list[Measurement]) -> dict[str, Any]:
    """One table row for a P2P matrix: the range over its pairs (each pair is listed below the table)."""
    m0 = group[0]
    statuses = sorted({m.status for m in group})
    worst = max(statuses, key=lambda s: {"ok": 0, "skipped": 1, "partial": 2}.get(s, 3))
    return {
        "m": m0,
        "kind": m0.kind.replace("_", " "),
        "gpus": f"{len(group)} ordered pairs",
        "value": _span([m.value_gbps for m in group if m.value_gbps is not None]),
        "latency": _span([m.latency_us for m in group if m.latency_us is not None])
        if any(m.latency_us is not None for m in group)
        else "",
        "expected": _span([m.expected_gbps for m in group if m.expected_gbps is not None]),
        "ratio": (
            lambda r: f"{min(r):.0%} – {max(r):.0%}" if r and min(r) != max(r) else (f"{r[0]:.0%}" if r else "—")
        )([m.ratio for m in group if m.ratio is not None]),
        "status": ", ".join(f"{s} ×{sum(1 for m in group if m.status == s)}" for s in statuses)
        if len(statuses) > 1
        else statuses[0],
        "prov": _m_prov(rig, m0),
        "css": _status_css(worst),
    }


def bandwidth_view(rig: Rig) -> dict[str, Any] | None:
    """The bandwidth section: the table (P2P pairs summarised, each pair listed below it), the busbw charts, the P2P
    heat maps and the host<->device bars; None without measurements."""
    ms = rig.measurements
    if not ms:
        return None
    out: dict[str, Any] = {"table": [], "pairs": [], "charts": [], "heatmaps": [], "bars": None, "uncharted": []}
    _table(rig, ms, out)
    _busbw_charts(rig, ms, out)
    _heat_maps(rig, ms, out)
    _copy_bars(rig, ms, out)
    return out


def _table(rig: Rig, ms: list[Measurement], out: dict[str, Any]) -> None:
    pair_groups: dict[tuple, list[Measurement]] = {}
    for m in ms:
        row = _m_row(rig, m)
        if m.kind.startswith("p2p") and len(m.gpus) == 2:
            out["pairs"].append(row)
            key = (m.kind, m.p2p_enabled, m.backend)
            if key not in pair_groups:
                pair_groups[key] = []
                out["table"].append({"group": key})
            pair_groups[key].append(m)
        else:
            out["table"].append(row)
    for k, row in enumerate(out["table"]):
        if "group" in row:
            out["table"][k] = _pair_summary(rig, pair_groups[row["group"]])


def _busbw_charts(rig: Rig, ms: list[Measurement], out: dict[str, Any]) -> None:
    from gpuadvisor.render.html import svg_charts

    # busbw sweeps, one chart per world size (a chart mixes only comparable runs).
    groups: dict[tuple, list[Measurement]] = {}
    for m in ms:
        if m.kind in COLLECTIVES and m.rows:
            groups.setdefault((m.world_size, m.backend), []).append(m)
    for (ws, backend), group in list(groups.items()):
        if ws == 1:  # one rank crosses no link: busbw is 0 by the nccl-tests factor, or a local copy (broadcast)
            del groups[(ws, backend)]
            out["uncharted"].append(
                f"{', '.join(m.kind.replace('_', ' ') for m in group)} ran on 1 rank ({backend or 'backend unknown'}): "
                "no data crosses a link, so there is no bus bandwidth to chart (busbw is 0 by the nccl-tests factor, "
                "and a one-rank broadcast is a local copy). Their rows are in the table below."
            )
    for (ws, backend), group in groups.items():
        series = []
        expected = []
        for m in group:
            label = m.kind.replace("_", " ") + (" (P2P off)" if m.p2p_enabled is False else "")
            series.append((label, [(r.size_bytes, r.busbw_gbps) for r in m.rows if r.size_bytes > 0]))
            if m.expected_gbps is not None:
                expected.append((f"{label} expected", m.expected_gbps))
        chart = svg_charts.line_chart(series, expected)
        provs = sorted({_m_prov(rig, m) for m in group})
        exp_src = sorted({m.expected_source for m in group if m.expected_source})
        out["charts"].append(
            {
                "chart": chart,
                "title": f"busbw against message size — {ws or '?'} ranks, {backend or 'backend unknown'}",
                "prov": provs,
                "expected_sources": exp_src,
                "methods": _methods(group),
            }
        )


def _heat_maps(rig: Rig, ms: list[Measurement], out: dict[str, Any]) -> None:
    from gpuadvisor.render.html import svg_charts

    # P2P matrices: one Measurement per ordered pair (gpus = [src, dst]).
    index_pos = {g.index: k for k, g in enumerate(rig.gpus)}
    labels = [g.label for g in rig.gpus]
    for kind, unit, attr in (
        ("p2p_unidir", "GB/s", "value_gbps"),
        ("p2p_bidir", "GB/s", "value_gbps"),
        ("p2p_latency", "µs", "latency_us"),
    ):
        for enabled in (True, None, False):
            pairs = [
                m
                for m in ms
                if m.kind == kind
                and len(m.gpus) == 2
                and m.p2p_enabled is enabled
                and getattr(m, attr) is not None
                and all(g in index_pos for g in m.gpus)
            ]
            if not pairs:
                continue
            n = len(rig.gpus)
            grid: list[list[float | None]] = [[None] * n for _ in range(n)]
            for m in pairs:
                grid[index_pos[m.gpus[0]]][index_pos[m.gpus[1]]] = getattr(m, attr)
            title = {
                "p2p_unidir": "GPU-to-GPU copy, one direction",
                "p2p_bidir": "GPU-to-GPU copy, both directions at once",
                "p2p_latency": "GPU-to-GPU latency",
            }[kind]
            title += {True: ", P2P on", False: ", P2P off", None: ""}[enabled]
            exp = [m.expected_gbps for m in pairs if m.expected_gbps is not None] if attr == "value_gbps" else []
            out["heatmaps"].append(
                {
                    "map": svg_charts.heat_map(labels, grid, unit=unit),
                    "title": title,
                    "prov": sorted({_m_prov(rig, m) for m in pairs}),
                    "rows_label": "from (row) → to (column)",
                    "methods": _methods(pairs),
                    "expected": _span(exp) if exp else "",
                }
            )


def _copy_bars(rig: Rig, ms: list[Measurement], out: dict[str, Any]) -> None:
    from gpuadvisor.render.html import svg_charts

    rows = []
    for m in ms:
        if m.kind in COPIES and len(m.gpus) == 1 and m.value_gbps is not None:
            name = {"h2d": "host→device", "d2h": "device→host"}[m.kind]
            name += f" {m.memory}" if m.memory else ""
            name += " (all at once)" if m.concurrent else ""
            tip = f"GPU {m.gpus[0]} {name}: {m.value_gbps:.2f} GB/s" + (
                f", expected {m.expected_gbps:.2f} GB/s from {m.expected_source}" if m.expected_gbps is not None else ""
            )
            rows.append((f"GPU {m.gpus[0]}", name, m.value_gbps, m.expected_gbps, tip))
    if rows:
        rows.sort(key=lambda r: int(r[0].split()[1]))  # stable: h2d/d2h keep the scan's order within a GPU
        copies = [m for m in ms if m.kind in COPIES]
        out["bars"] = {
            "chart": svg_charts.bar_chart(rows),
            "prov": sorted({_m_prov(rig, m) for m in copies}),
            "methods": _methods(copies),
            "series": _series_legend(rows),
            "expected_sources": sorted({m.expected_source for m in copies if m.expected_source}),
        }


def _series_legend(rows: list[tuple]) -> list[tuple[str, str]]:
    from gpuadvisor.render.html.svg_charts import PALETTE

    names: list[str] = []
    for r in rows:
        if r[1] not in names:
            names.append(r[1])
    return [(n, PALETTE[k % len(PALETTE)]) for k, n in enumerate(names)]
