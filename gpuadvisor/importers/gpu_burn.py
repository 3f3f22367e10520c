"""gpu_burn's own output (github.com/wilicc/gpu-burn, gpu_burn-drv.cpp): a stress test that multiplies matrices on
every GPU and compares each GPU's results with what they must be.

Forms read:

- its progress line, one entry per GPU joined by ``-``: ``30.0%  proc'd: 2412 (16011 Gflop/s) - 2398 (15980
  Gflop/s)   errors: 0 - 0   temps: 45 C - 46 C``; a worker whose process exited shows ``-1 (0 Gflop/s)`` and its
  count ``(DIED!)``, a GPU whose results differ shows its count with ``(WARNING!)``; the GPUs are numbered in the
  order printed (gpu_burn's device numbers, CUDA's); its temperatures, an instant under the test's load, are
  not kept as the GPUs' (the GPUs' list at the end holds none: one reading of the GPUs whichever part is pasted);
- its closing list, ``Tested 8 GPUs:`` then ``GPU 3: OK`` or ``GPU 3: FAULTY``: gpu_burn's own verdict per GPU (a
  FAULTY one computed wrong results: another checker's failed check, GA827);
- ``No clients are alive!  Aborting``: every worker died, the run tested nothing.

A worker that died tells nothing of its GPU (gpu_burn's maintainer asks for the kernel log to tell): it is noted,
not judged. A paste quoted in double quotes (``"30.0%  proc'd: ...``) is read alike.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Gpu, HealthCheck, Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.section import Section, clean_lines

WHAT = "gpu_burn"
TOOL = "gpu_burn"
_PROGRESS = re.compile(
    r"^[ \t]*(?:\"[ \t]*)?(?P<pct>\d{1,3}\.\d)%\s+proc'd:\s*(?P<procd>.*?)\s+errors:\s*(?P<errors>.*?)"
    r"\s+temps:\s*(?P<temps>.*?)\s*$"
)
_TESTED = re.compile(r"^\s*Tested (\d{1,4}) GPUs:\s*$")
_VERDICT = re.compile(r"^\s*GPU (\d{1,4}): (OK|FAULTY)\s*$")
_ENTRY = re.compile(r"(-?\d+) \((\d+) Gflop/s\)")
_COUNT = re.compile(r"(-?\d+)\s*(?:\((DIED|WARNING)!\))?")
_ABORT = "No clients are alive!"
# gpu_burn's own lines around its progress (gpu_burn-drv.cpp's messages): a paste may start with one
OWN = re.compile(
    r"^[ \t]*(?:\"[ \t]*)?(?:Killing processes|No clients are alive!|Initialized device \d+ with \d+ MB of memory"
    r"|Couldn't init a GPU test|Results are \d+ bytes each|Summary at:|Freed memory for dev \d+|Uninitted cublas"
    r"|Burning for \d+ seconds|Run length not specified)"
)
_WINDOW = 40  # lines looked at below one of its own lines for its progress or its verdicts


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """A progress line or the closing ``Tested N GPUs:`` list; or one of gpu_burn's own lines with one of those close
    below (or its message that every worker died)."""
    if current is not None and current.kind == "gpu-burn":
        return False
    if _PROGRESS.match(lines[i]) or _TESTED.match(lines[i]):
        return True
    if not OWN.match(lines[i]):
        return False
    return _ABORT in lines[i] or any(_PROGRESS.match(x) or _TESTED.match(x) for x in lines[i + 1 : i + _WINDOW])


def _entries(m: re.Match[str]) -> tuple[list[tuple[int, int]], list[tuple[int, str | None]]]:
    """A progress line's per-GPU iterations and Gflop/s, and error counts with their marks."""
    procd = [(int(a), int(b)) for a, b in _ENTRY.findall(m.group("procd"))]
    errors = [(int(n), mark or None) for n, mark in _COUNT.findall(m.group("errors").replace("- ", " "))]
    return procd, errors


def parse(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The GPUs the last progress line shows (or the closing list counts), each FAULTY verdict as a failed check,
    the workers that died noted."""
    rig = Rig()
    last: tuple[int, re.Match[str]] | None = None
    checks: list[HealthCheck] = []
    tested = None
    for k, line in enumerate(clean_lines(text)):
        lineno = first_line + k
        if (m := _PROGRESS.match(line)) is not None:
            last = (lineno, m)
        elif (t := _TESTED.match(line)) is not None:
            tested = int(t.group(1))
        elif (v := _VERDICT.match(line)) is not None and v.group(2) == "FAULTY":
            gpu = int(v.group(1))
            checks.append(HealthCheck(TOOL, "compare (results checked)", "fail", "FAULTY: the GPU computed wrong "
                                      "results", [gpu], None, f"{source}:{lineno}"))  # fmt: skip
        elif _ABORT in line:
            said = "every worker died ('No clients are alive!  Aborting'): the run tested nothing"
            rig.problems.append(f"{source}: line {lineno}: gpu_burn: {said}; rerun it after reading the kernel log")
    if last is None and tested is None:
        raise ImportParseError(source, first_line, "gpu_burn: no progress line and no 'Tested N GPUs:' list: no GPU "
                               "shown; paste the run's progress lines too")  # fmt: skip
    count = tested or 0
    if last is not None:
        lineno, m = last
        procd, errors = _entries(m)
        count = len(procd) or len(errors)
        died = [n for n, (_, mark) in enumerate(errors) if mark == "DIED"]
        if died:
            rig.problems.append(f"{source}: line {lineno}: gpu_burn: the worker of GPU {', '.join(map(str, died))} "
                                "died (its process exited; its counts are not results): that says nothing of the "
                                "GPU itself")  # fmt: skip
    for n in range(count):
        g = Gpu(index=n)
        g.unavailable["name"] = "gpu_burn's progress line numbers the GPUs, it does not name them"
        rig.origins[f"gpus[{n}]"] = f"{source}:{last[0] if last else first_line}"
        rig.gpus.append(g)
    if checks:
        rig.node.health_checks = checks
    return rig
