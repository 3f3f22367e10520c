"""DCGM's load generator ``dcgmproftester11/12/13`` as it prints its run: one progress line per report interval.

DCGM's command reference (dcgmproftester: "generate CUDA loads for DCGM profiling fields and optionally compare the
measured values") describes the tool: ``-t`` names the profiling field to load (1004 tensor, 1007 FP32, ...), ``-i``
the GPUs, ``--no-dcgm-validation`` switches DCGM's own reading off (then it prints ``Skipping CreateDcgmGroups()
since DCGM validation is disabled``). Each progress line names the worker and field: ``Worker 0:0[1007]:
Fp32EngineActive: target max, dcgm 0`` (DCGM 3.3 and later: the activity aimed at, and DCGM's reading, 0 without
validation), ``Worker 0:0[1004]: TensorEngineActive: generated ???, dcgm 0.000 (250362.2 gflops)`` (earlier: the
GFLOPS the load reached; on MIG, ``dcgm { GPU: 0.000, GI: 0.000, CI: 0.000 }``, a worker per instance), or the same
without the ``Worker`` prefix (DCGM 2.0). A run that fails prints
``Error N from RunTests(). Exiting.``.

Read: which fields ran on which workers, the GFLOPS reported (the last and the highest), and an error, as notes: the
output names no GPU (no name, bus id or memory) and gives no expected figure, so nothing is judged from it.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.rows import stripped_rows
from gpuadvisor.importers.section import Section

WHAT = "dcgmproftester"
_SKIPPING = re.compile(
    r"^Skipping (?:CreateDcgmGroups|WatchFields|UnwatchFields)\(\) since DCGM validation is disabled"
)
_WORKER = r"^(?:Worker (\d+:\d+)\s*\[(\d+)\]:\s*)?"  # "Worker 0:0[1007]: " (DCGM 2.2 and later)
# "Fp32EngineActive: target max, dcgm 0", "TensorEngineActive: generated ???, dcgm 0.000 (250362.2 gflops)"
_PROGRESS = re.compile(
    _WORKER + r"([A-Z][A-Za-z0-9]+): (?:target (\S+)|generated (\S+)), dcgm (\{[^}]*\}|[\d.e+-]+)"
    r"(?: \(([\d.e+]+) gflops\))?"
)
_ERROR = re.compile(r"(Error -?\d+ from RunTests\(\)\. Exiting\.)")
_FIELD = re.compile(r"dcgmproftester\d*\b.*?\s-t\s*(\S+)")


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """``Skipping CreateDcgmGroups() since DCGM validation is disabled``, or a progress line (``Worker 0:0[1007]:
    Fp32EngineActive: target max, dcgm 0``, ``TensorEngineActive: generated ???, dcgm 0.000 (27334.5 gflops)``), or
    its ``Error 0 from RunTests(). Exiting.``."""
    s = lines[i].strip()
    if _ERROR.search(s):
        return True  # its error line (a log line of DCGM's own form): read as this tool's, wherever it stands
    if current is not None and current.kind == "dcgm-proftester":
        return False
    return bool(_SKIPPING.match(s) or _PROGRESS.match(s))


def _gflops(values: list[float]) -> str:
    if not values:
        return "no GFLOPS printed (the tool prints none since DCGM 3.3)"
    return f"{len(values)} GFLOPS reports, the last {values[-1]:.1f}, the highest {max(values):.1f}"


def parse_dcgm_proftester(
    text: str, source: str = "<text>", first_line: int = 1, context: list[str] | None = None
) -> Rig:
    """The fields the load ran, its workers, the GFLOPS it reported and an error, as notes; no GPU."""
    rig = Rig()
    runs: dict[str, set[str]] = {}  # field (name [id]) -> workers
    gflops: list[float] = []
    lines = stripped_rows(text, first_line)
    skipped = any(_SKIPPING.match(s) for s, _, _ in lines)
    first = None
    for s, lineno, cut in lines:
        m = _PROGRESS.match(s)
        if m and not cut:
            first = first or lineno
            field = m.group(3) + (f" [{m.group(2)}]" if m.group(2) else "")
            runs.setdefault(field, set()).add(m.group(1) or "")
            if m.group(7):
                gflops.append(float(m.group(7)))
        e = _ERROR.search(s)
        if e:
            rig.problems.append(
                f"{source}: line {lineno}: {WHAT}: {e.group(1)}: the load generator stopped, its test not run"
            )
    if not runs and not skipped and not rig.problems:
        raise ImportParseError(source, first_line, f"{WHAT} without a progress line")
    asked = next((m.group(1) for x in reversed(context or []) if (m := _FIELD.search(x))), None)
    if runs:
        fields = "; ".join(f"{f} on worker {', '.join(sorted(w))}" if any(w) else f for f, w in runs.items())
        validation = " (DCGM validation off: its 'dcgm' column is not a reading of the GPU)" if skipped else ""
        rig.problems.append(
            f"{source}: line {first}: {WHAT}{f' -t {asked}' if asked else ''} ran {fields}{validation}; "
            f"{_gflops(gflops)}; no GPU named in its output"
        )
    return rig
