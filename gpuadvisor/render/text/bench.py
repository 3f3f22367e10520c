"""Terminal rendering of Measurements: nccl-tests style sweeps, copy and peer matrices, measured vs expected."""

from __future__ import annotations

from collections import defaultdict

from gpuadvisor.bench.formulas import COLLECTIVES, NCCL_TESTS_SOURCE
from gpuadvisor.facts import COMPUTE, Measurement
from gpuadvisor.text import plural

_TYPE = {"float32": "float", "float16": "half", "bfloat16": "bfloat16", "uint8": "uint8"}


def _f(v: float | None, nd: int = 2) -> str:
    return "-" if v is None else f"{v:.{nd}f}"


def _gpus(m: Measurement) -> str:
    if not m.gpus:
        return "cpu" if m.backend == "gloo" else "-"
    return ",".join(str(g) for g in m.gpus)


def _comment(text: str, width: int = 80) -> list[str]:
    """A ``# `` comment line as nccl-tests' output carries them, wrapped to ``width`` (later lines ``#   ``)."""
    import textwrap

    return textwrap.wrap(
        text, width, initial_indent="# ", subsequent_indent="#   ", break_on_hyphens=False, break_long_words=False
    ) or ["#"]


def _where(m: Measurement) -> str:
    """Where a sweep ran: "GPUs 0,1", or "on the CPU" for gloo without GPUs."""
    return "on the CPU" if not m.gpus and m.backend == "gloo" else f"GPUs {_gpus(m)}"


def _time_us(t: float) -> str:
    """A time as nccl-tests prints it: 2 decimals under 100 us, 1 under 10 ms, none above (common.cu)."""
    return f"{t:.0f}" if t >= 10000.0 else f"{t:.1f}" if t >= 100.0 else f"{t:.2f}"


def _status(m: Measurement) -> str:
    return m.status if not m.error else f"{m.status}: {m.error}"


def render_sweep(m: Measurement) -> str:
    ranks = "ranks not shown" if m.world_size is None else f"{m.world_size} rank(s)"  # e.g. a pasted table's rows
    head = f"# {m.kind} · {m.backend or 'backend not shown'} · {ranks} · {_where(m)}"
    if m.iters is not None:
        head += f" · warm-up {m.warmup_iters or 0}, {m.iters} timed iterations"
    lines = _comment(head[2:])
    if m.method:
        lines += _comment(f"method: {m.method}")
    lines += [
        "#       size         count      type       time     algbw     busbw  #wrong",
        "#        (B)    (elements)                 (us)    (GB/s)    (GB/s)        ",
    ]
    for r in m.rows:
        wrong = "-" if r.errors is None else str(r.errors)
        lines.append(
            f"{r.size_bytes:>12} {r.count:>13} {_TYPE.get(r.dtype, r.dtype):>9} {_time_us(r.time_us):>10} "
            f"{r.algbw_gbps:>9.2f} {r.busbw_gbps:>9.2f} {wrong:>7}"
        )
    if not m.rows:
        lines.append("#  (no size measured)")
    else:
        wrong_total = sum(r.errors or 0 for r in m.rows)
        lines.append(f"# Out of bounds values : {wrong_total} {'OK' if wrong_total == 0 else 'FAILED'}")
        avg = sum(r.busbw_gbps for r in m.rows) / len(m.rows)
        lines.append(
            f"# Avg bus bandwidth    : {avg:.2f} GB/s (mean busbw of {plural(len(m.rows), 'size')}, as nccl-tests)"
        )
    tail = f"# busbw {_f(m.value_gbps)} GB/s"
    if m.rows and m.value_gbps is not None:
        tail += f" at {m.rows[-1].size_bytes} B"
    tail += f"; expected {_f(m.expected_gbps)} GB/s" if m.expected_gbps is not None else "; no expected figure"
    tail += f" (ratio {m.ratio:.2f})" if m.ratio is not None else ""
    lines += _comment(tail[2:])
    lines += _comment(f"  expected: {m.expected_source or '-'}")
    lines += _comment(f"status: {_status(m)}")
    lines += [ln for n in m.notes for ln in _comment(f"note: {n}")]
    return "\n".join(lines)


def _copy_table(ms: list[Measurement]) -> str:
    cols = [  # (header, kind, memory, concurrent): None matches any
        ("h2d pin", "h2d", "pinned", False),
        ("d2h pin", "d2h", "pinned", False),
        ("h2d page", "h2d", "pageable", False),
        ("d2h page", "d2h", "pageable", False),
        ("h2d all", "h2d", "pinned", True),
        ("d2h all", "d2h", "pinned", True),
        ("d2d", "d2d", None, None),
    ]
    cell: dict[tuple[int, int], Measurement] = {}
    gpus: set[int] = set()
    for m in ms:
        if not m.gpus:
            continue
        g = m.gpus[0]
        for c, (_, k, mem, conc) in enumerate(cols):
            if m.kind == k and (mem is None or m.memory == mem) and (conc is None or bool(m.concurrent) == conc):
                cell[(g, c)] = m
                gpus.add(g)
    if not gpus:
        return ""
    size = next((m.rows[0].size_bytes for m in ms if m.rows), None)
    out = [
        f"Host <-> device and device-to-device copies, GB/s (1e9 B/s){f', {size} B buffers' if size else ''}; "
        "'all' = every GPU at once; d2d counts each byte once (CUDA samples' bandwidthTest counts it twice)",
        "GPU " + "".join(f"{name:>10}" for name, *_ in cols) + f"{'expected':>10}{'ratio':>7}",
    ]
    for g in sorted(gpus):
        row = f"{g:>3} "
        for c in range(len(cols)):
            mc = cell.get((g, c))
            row += f"{('-' if mc is None else _f(mc.value_gbps) if mc.status == 'ok' else mc.status):>10}"
        pin = cell.get((g, 0))
        row += f"{_f(pin.expected_gbps if pin else None):>10}{_f(pin.ratio if pin else None):>7}"
        out.append(row)
    return "\n".join(out)


def _matrix(ms: list[Measurement], kind: str, enabled: bool) -> str:
    sel = [m for m in ms if m.kind == kind and bool(m.p2p_enabled) == enabled and len(m.gpus) == 2]
    if not sel:
        return ""
    gpus = sorted({g for m in sel for g in m.gpus})
    val: dict[tuple[int, int], str] = {}
    for m in sel:
        a, b = m.gpus
        if m.status != "ok":
            text = "n/a" if m.status == "skipped" else m.status
        else:
            text = _f(m.latency_us if kind == "p2p_latency" else m.value_gbps)
        val[(a, b)] = text
        if kind == "p2p_bidir":
            val[(b, a)] = text
    unit = "us" if kind == "p2p_latency" else "GB/s"
    what = {
        "p2p_unidir": "unidirectional",
        "p2p_bidir": "bidirectional (both directions summed)",
        "p2p_latency": "latency, 4-byte copy",
    }[kind]
    out = [
        f"P2P {what}, {unit}, P2P {'enabled' if enabled else 'disabled'} (row: source GPU, column: destination)",
        "   D\\D" + "".join(f"{g:>9}" for g in gpus),
    ]
    for a in gpus:
        out.append(f"{a:>6} " + "".join(f"{(val.get((a, b), '-') if a != b else 'X'):>9}" for b in gpus))
    return "\n".join(out)


def render_compute(ms: list[Measurement]) -> str:
    """The compute figures: one line per matmul dtype and shape, and memory bandwidth, per device."""
    sel = [m for m in ms if m.kind in COMPUTE]
    if not sel:
        return ""
    out = [
        "Compute: dense matmul TFLOP/s (1e12 FLOP/s, 2·M·N·K FLOPs per MxK · KxN product) against the datasheet "
        "dense peak; memory: copy bandwidth, bytes read + written per second (GB/s, 1e9 B/s)",
        f"{'device':<8}{'kind':<8}{'dtype':<7}{'shape (MxNxK)':<20}{'measured':>10}{'peak':>10}{'ratio':>7}  status",
    ]
    for m in sel:
        dev = "cpu" if m.backend == "cpu" else (f"GPU {m.gpus[0]}" if m.gpus else "gpu")
        if m.kind == "matmul":
            kind, val, exp, digits = "matmul", m.value_tflops, m.expected_tflops, 3 if m.backend == "cpu" else 1
        else:
            kind, val, exp, digits = "memory", m.value_gbps, m.expected_gbps, 1
        out.append(
            f"{dev:<8}{kind:<8}{(m.dtype or '-'):<7}{(m.shape or '-'):<20}{_f(val, digits):>10}"
            f"{_f(exp, 1):>10}{_f(m.ratio):>7}  {_status(m)}"
        )
    methods = sorted({(m.kind, m.dtype, m.method) for m in sel if m.method}, key=str)
    seen: set[str] = set()
    for _kind, _dtype, method in methods:
        generic = method.split("; warm-up")[0] if method else ""
        if generic and generic not in seen:
            seen.add(generic)
            out += _comment(f"method: {generic}; warm-up, then runs of back-to-back calls, median over runs")
    sources = sorted({m.expected_source for m in sel if m.expected_source})
    out += [ln for src in sources for ln in _comment(f"peak: {src}")]
    no_peak = sorted({m.why("expected_tflops") or m.why("expected_gbps") or "" for m in sel if m.ratio is None} - {""})
    out += [ln for why in no_peak for ln in _comment(f"no peak: {why}")]
    return "\n".join(out)


def render_summary(ms: list[Measurement]) -> str:
    ms = [m for m in ms if m.kind not in COMPUTE]
    if not ms:
        return ""
    gw = max([len("gpus")] + [len(_gpus(m)) for m in ms]) + 2  # "0,1,2,3,4,5,6,7" must not run into the mode
    out = [
        "Measured vs expected (GB/s; collectives: busbw at the largest size)",
        f"{'kind':<15}{'gpus':<{gw}}{'mode':<14}{'measured':>10}{'expected':>10}{'ratio':>7}  status",
    ]
    for m in ms:
        mode = m.memory or ""
        if m.concurrent:
            mode += " all"
        if m.p2p_enabled is not None:
            mode = "p2p on" if m.p2p_enabled else "p2p off"
        if m.kind in COLLECTIVES:
            mode = f"{m.backend} n={m.world_size}"
        value = m.latency_us if m.kind == "p2p_latency" else m.value_gbps
        unit = " us" if m.kind == "p2p_latency" and value is not None else ""
        out.append(
            f"{m.kind:<15}{_gpus(m):<{gw}}{mode.strip():<14}{_f(value) + unit:>10}{_f(m.expected_gbps):>10}"
            f"{_f(m.ratio):>7}  {_status(m)}"
        )
    return "\n".join(out)


def render_measurements(measurements: list[Measurement]) -> str:
    """Everything a bench run measured, as text for a terminal."""
    if not measurements:
        return "No measurements."
    blocks: list[str] = []
    by_kind: dict[str, list[Measurement]] = defaultdict(list)
    for m in measurements:
        by_kind[m.kind].append(m)
    for kind in COLLECTIVES:
        blocks += [render_sweep(m) for m in by_kind.get(kind, [])]
    if any(k in COLLECTIVES for k in by_kind):
        blocks.append(
            "\n".join(
                _comment(
                    f"algbw = S/t; busbw = algbw × 2(n-1)/n (all_reduce), (n-1)/n (all_gather, reduce_scatter; "
                    f"S = the whole gathered / scattered array), 1 (broadcast): {NCCL_TESTS_SOURCE}"
                )
            )
        )
    copies = [m for m in measurements if m.kind in ("h2d", "d2h", "d2d")]
    if copies and (t := _copy_table(copies)):
        blocks.append(t)
    for kind in ("p2p_unidir", "p2p_bidir", "p2p_latency"):
        for enabled in (True, False):
            if t := _matrix(measurements, kind, enabled):
                blocks.append(t)
    if t := render_compute(measurements):
        blocks.append(t)
    if t := render_summary(measurements):
        blocks.append(t)
    return "\n\n".join(blocks) + "\n"
