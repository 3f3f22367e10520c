"""Chart geometry for the HTML report: a log-x line chart, a heat map and horizontal bars.

Pure numbers in, coordinates out; the template draws them. Colours are computed here from values only, never
from text in the scan.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

PALETTE = ["#1f6fb2", "#d1495b", "#2a9d8f", "#8d5fd3", "#e09f3e", "#4a4e69", "#00798c", "#b5651d"]
DASHES = ["", "6 3", "2 3", "8 3 2 3", "4 4", "1 2", "10 4", "3 6"]


@dataclass
class Point:
    x: float
    y: float
    tip: str


@dataclass
class Series:
    label: str
    d: str
    points: list[Point]
    color: str
    dash: str


@dataclass
class HLine:
    y: float
    x1: float
    x2: float
    label: str
    color: str


@dataclass
class LineChart:
    width: float
    height: float
    left: float
    top: float
    right: float
    bottom: float
    x_ticks: list[tuple[float, str]]
    y_ticks: list[tuple[float, str]]
    series: list[Series]
    hlines: list[HLine] = field(default_factory=list)
    x_label: str = ""
    y_label: str = ""


def fmt_bytes(n: float) -> str:
    """Binary units for message sizes (nccl-tests sweeps double, so sizes are powers of two)."""
    for unit, k in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= k:
            v = n / k
            return f"{v:.0f} {unit}" if abs(v - round(v)) < 1e-9 else f"{v:.1f} {unit}"
    return f"{n:.0f} B"


def nice_max(v: float) -> float:
    if v <= 0:
        return 1.0
    exp = 10 ** math.floor(math.log10(v))
    for m in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if m * exp >= v:
            return m * exp
    return 10 * exp


def _y_ticks(ymax: float, n: int = 5) -> list[float]:
    step = ymax / n
    return [step * i for i in range(n + 1)]


def _fmt_num(v: float) -> str:
    if v >= 100 or v == int(v):
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}".rstrip("0").rstrip(".")
    return f"{v:.2f}".rstrip("0").rstrip(".")


def line_chart(
    series: Sequence[tuple[str, Sequence[tuple[float, float]]]],
    expected: list[tuple[str, float]] | None = None,
    *,
    width: float = 860,
    height: float = 340,
    x_label: str = "message size (bytes, log scale)",
    y_label: str = "busbw (GB/s)",
) -> LineChart:
    """Series of (size in bytes, GB/s) on a log2 x axis and a linear y axis from 0."""
    left, right, top, bottom = 58.0, width - 34.0, 14.0, height - 44.0
    xs = [x for _, pts in series for x, _ in pts if x > 0]
    ys = [y for _, pts in series for _, y in pts] + [v for _, v in expected or []]
    lo = math.log2(min(xs)) if xs else 0.0
    hi = math.log2(max(xs)) if xs else 1.0
    if hi - lo < 1:
        lo, hi = lo - 0.5, hi + 0.5
    ymax = nice_max(max(ys) * 1.05 if ys else 1.0)

    def px(x: float) -> float:
        return left + (math.log2(x) - lo) / (hi - lo) * (right - left)

    def py(y: float) -> float:
        return bottom - y / ymax * (bottom - top)

    span = hi - lo
    step = max(1, math.ceil(span / 8))
    # Ticks on powers of two, every `step` octaves, aligned so that KiB/MiB/GiB boundaries show when possible.
    first = math.ceil(lo)
    if step > 1:
        while first % step and first < hi:
            first += 1
    x_ticks = [(px(2.0**e), fmt_bytes(2.0**e)) for e in range(first, math.floor(hi) + 1, step)]
    y_ticks = [(py(v), _fmt_num(v)) for v in _y_ticks(ymax)]
    out: list[Series] = []
    for k, (label, pts) in enumerate(series):
        pts = sorted((x, y) for x, y in pts if x > 0)
        d = " ".join(("M" if i == 0 else "L") + f"{px(x):.1f},{py(y):.1f}" for i, (x, y) in enumerate(pts))
        points = [Point(px(x), py(y), f"{label}: {fmt_bytes(x)} → {y:.2f} GB/s") for x, y in pts]
        out.append(Series(label, d, points, PALETTE[k % len(PALETTE)], DASHES[k % len(DASHES)]))
    hlines = []
    merged: dict[float, list[str]] = {}
    for label, v in expected or []:
        merged.setdefault(round(v, 3), []).append(label)
    for v, labels in merged.items():
        names = [lab.removesuffix(" expected") for lab in labels]
        k = next((i for i, (s, _) in enumerate(series) if s == names[0]), 0)
        color = PALETTE[k % len(PALETTE)] if len(names) == 1 else "#555555"
        text = f"expected {v:.1f} GB/s" + (f" ({names[0]})" if len(names) == 1 else "")
        hlines.append(HLine(py(v), left, right, text, color))
    return LineChart(width, height, left, top, right, bottom, x_ticks, y_ticks, out, hlines, x_label, y_label)


# -- heat map ---------------------------------------------------------------------------------------------


@dataclass
class Cell:
    x: float
    y: float
    text: str
    fill: str
    ink: str
    tip: str
    css: str = ""


@dataclass
class HeatMap:
    width: float
    height: float
    cell: float
    origin: float
    labels: list[tuple[float, str]]
    cells: list[Cell]
    vmin: float
    vmax: float
    legend: list[tuple[float, str]]  # (x, fill) stops for the legend bar
    unit: str


def heat_color(t: float) -> tuple[str, str]:
    """Fill and text colour for t in [0, 1]: pale yellow (low) to deep blue (high); readable in grey print."""
    t = min(1.0, max(0.0, t))
    stops = [(0.0, (255, 247, 188)), (0.5, (65, 182, 196)), (1.0, (12, 44, 132))]
    for (t0, c0), (t1, c1) in zip(stops, stops[1:], strict=False):
        if t <= t1:
            f = (t - t0) / (t1 - t0) if t1 > t0 else 0.0
            rgb = tuple(round(a + (b - a) * f) for a, b in zip(c0, c1, strict=True))
            break
    lum = 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2]
    return "#{:02x}{:02x}{:02x}".format(*rgb), ("#000000" if lum > 140 else "#ffffff")


def heat_map(labels: list[str], values: list[list[float | None]], *, unit: str = "GB/s", cell: float = 52.0) -> HeatMap:
    """Colour from 0 to the largest value: a uniform matrix looks uniform (a min-to-max scale would paint a 2 %
    spread between healthy pairs as the whole range from pale to dark)."""
    n = len(labels)
    origin = 60.0
    known = [v for i, row in enumerate(values) for j, v in enumerate(row) if v is not None and i != j]
    vmin = 0.0
    vmax = max(known) if known and max(known) > 0 else 1.0
    cells: list[Cell] = []
    for i in range(n):
        for j in range(n):
            v = values[i][j] if i < len(values) and j < len(values[i]) else None
            x, y = origin + j * cell, origin + i * cell
            if i == j and v is None:
                cells.append(Cell(x, y, "—", "#eeeeee", "#666666", f"{labels[i]} to itself: not measured", "self"))
            elif v is None:
                cells.append(
                    Cell(x, y, "n/a", "#f4f4f4", "#666666", f"{labels[i]} → {labels[j]}: not measured", "missing")
                )
            else:
                t = 0.5 if vmax == vmin else (v - vmin) / (vmax - vmin)
                fill, ink = heat_color(t)
                text = f"{v:.0f}" if v >= 100 else f"{v:.1f}"
                cells.append(Cell(x, y, text, fill, ink, f"{labels[i]} → {labels[j]}: {v:.2f} {unit}"))
    size = origin + n * cell + 8
    legend = [(i / 10, heat_color(i / 10)[0]) for i in range(11)]
    return HeatMap(
        size,
        size + 40,
        cell,
        origin,
        [(origin + k * cell + cell / 2, lab) for k, lab in enumerate(labels)],
        cells,
        vmin,
        vmax,
        legend,
        unit,
    )


# -- bars -------------------------------------------------------------------------------------------------


@dataclass
class Bar:
    label: str
    y: float
    w: float
    value: float
    expected: float | None
    ex: float | None
    text: str
    tip: str
    css: str
    color: str


@dataclass
class BarChart:
    width: float
    height: float
    left: float
    right: float
    bars: list[Bar]
    ticks: list[tuple[float, str]]
    bar_h: float
    unit: str = "GB/s"


def bar_chart(
    rows: list[tuple[str, str, float, float | None, str]], *, width: float = 720, bar_h: float = 16.0
) -> BarChart:
    """rows: (label, series name, GB/s, expected GB/s or None, tooltip); one bar per row."""
    left, right = 80.0, width - 190.0
    vmax = nice_max(max([r[2] for r in rows] + [r[3] for r in rows if r[3] is not None] + [1.0]) * 1.02)
    series = sorted({r[1] for r in rows}, key=[r[1] for r in rows].index)
    bars = []
    y = 10.0
    prev = None
    for label, name, v, exp, tip in rows:
        if prev is not None and label != prev:
            y += 6
        prev = label
        k = series.index(name)
        w = max(0.0, v / vmax * (right - left))
        ex = left + exp / vmax * (right - left) if exp is not None else None
        text = f"{v:.1f}" + (f" / {exp:.1f} GB/s ({v / exp:.0%})" if exp else " GB/s")
        bars.append(Bar(label, y, w, v, exp, ex, text, tip, f"s{k}", PALETTE[k % len(PALETTE)]))
        y += bar_h + 4
    ticks = [(left + t / vmax * (right - left), _fmt_num(t)) for t in _y_ticks(vmax)]
    return BarChart(width, y + 42, left, right, bars, ticks, bar_h)  # below the bars: ticks, then the axis unit


# -- stacked bars (memory per GPU of each candidate) -------------------------------------------------------

SEGMENT_COLORS = ["#1f6fb2", "#6baed6", "#e09f3e", "#2a9d8f", "#8d5fd3", "#9e9e9e", "#d1495b"]


@dataclass
class Segment:
    x: float
    w: float
    color: str
    tip: str


@dataclass
class StackedBar:
    label: str
    y: float
    segments: list[Segment]
    text: str
    css: str
    clipped: bool
    cap_x: float | None = None  # this bar's own capacity, when the bars do not share one


@dataclass
class StackedBars:
    width: float
    height: float
    left: float
    right: float
    bar_h: float
    bars: list[StackedBar]
    cap_x: float | None
    cap_label: str
    ticks: list[tuple[float, str]]
    legend: list[tuple[str, str]]
    unit: str = "GiB"
    above: bool = False  # each bar's label and total on a line above it (the phone-width variant)
    narrow: StackedBars | None = None  # the same bars drawn for a phone's width


def stacked_bars(rows: list[tuple], *, unit: str = "GiB", width: float = 900, bar_h: float = 14.0) -> StackedBars:
    """rows: (label, [(segment, value)], capacity, total, css[, note]). All rows share one capacity line when
    they share one capacity; bars beyond 1.6 × the largest capacity are clipped (their total is printed); a
    note is printed after the total. ``narrow``: the same chart 390 px wide with each label above its bar, for a
    phone (the wide one, scaled or scrolled there, showed a fifth of its axis)."""
    chart = _stacked(rows, unit=unit, width=width, bar_h=bar_h, above=False)
    chart.narrow = _stacked(rows, unit=unit, width=NARROW_PX, bar_h=bar_h, above=True)
    return chart


NARROW_PX = 390.0


def _stacked(rows: list[tuple], *, unit: str, width: float, bar_h: float, above: bool) -> StackedBars:
    longest = max((len(r[0]) for r in rows), default=10)
    has_note = any(len(r) > 5 and r[5] for r in rows)
    left, right = min(380.0, 20.0 + 7.0 * longest), width - (320.0 if has_note else 120.0)
    if above:  # labels and totals above the bars: the bars take the whole width
        left, right = 12.0, width - 16.0
    caps = [r[2] for r in rows]
    cap = max(caps) if caps else 1.0
    totals = [r[3] for r in rows]
    vmax = nice_max(min(max(totals + [cap]) * 1.02, cap * 1.6))
    names: list[str] = []
    for _, parts, *_ in rows:
        for n, _ in parts:
            if n not in names:
                names.append(n)
    colors = {n: SEGMENT_COLORS[k % len(SEGMENT_COLORS)] for k, n in enumerate(names)}
    scale = (right - left) / vmax
    bars = []
    y = 8.0
    for label, parts, capacity, total, css, *rest in rows:
        y += 16.0 if above else 0.0  # room for the label line
        note = f" · {rest[0]}" if rest and rest[0] else ""
        x = left
        segs = []
        for n, v in parts:
            if v <= 0:
                continue
            w = min(v * scale, right - x)
            if w > 0:
                segs.append(Segment(x, w, colors[n], f"{label}: {n} {v:,.1f} {unit}"))
            x += w
        clipped = total > vmax
        own = left + capacity * scale if capacity <= vmax else None
        bars.append(
            StackedBar(label, y, segs, f"{total:,.1f} {unit}" + (" ▸" if clipped else "") + note, css, clipped, own)
        )
        y += bar_h + 6
    same_cap = len(set(caps)) == 1
    if same_cap:
        for b in bars:
            b.cap_x = None
    cap_x = left + cap * scale if same_cap and cap <= vmax else None
    ticks = [(left + t * scale, _fmt_num(t)) for t in _y_ticks(vmax)]
    return StackedBars(
        width,
        y + 46,
        left,
        right,
        bar_h,
        bars,
        cap_x,
        f"GPU memory {cap:,.1f} {unit}" if same_cap else "",
        ticks,
        [(n, colors[n]) for n in names],
        unit,
        above,
    )
