"""LBNL Node Health Check (NHC) output: the checks that failed, as NHC prints them.

NHC's ``die()`` (github.com/mej/nhc, the ``nhc`` script) logs ``ERROR:  nhc:  Health check failed:  MESSAGE`` and
sends ``Health check failed:  MESSAGE`` to syslog; a check that returns non-zero without calling ``die()`` is logged
``Node Health Check failed.  Check CHECK returned RET`` and then dies with ``Check CHECK returned RET``; a detached
run's parent prints ``ERROR Health check failed:  MESSAGE``; with ``NHC_CHECK_ALL`` the run ends ``ERROR:  nhc:  N
health checks failed.``. MESSAGE starts with the check's function name where the check names itself
(``check_hw_ib:  No IB port is ACTIVE (LinkUp 100 Gb/sec).``). Other lines a site check prints (``Found XID
errors: 63``) are kept as the detail of the failure they precede.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import HealthCheck, Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.section import Section, outside

TOOL = "NHC"
# "ERROR:  nhc:  Health check failed:  ...", syslog's "nhc[123]: Health check failed:  ...", "ERROR Health check
# failed:  ..." (a detached run); NAME is the script's name (nhc, or a site's copy). A bare "Health check failed:"
# (other daemons print it too) counts only where NHC's check name follows.
_FAILED = re.compile(
    r"(?:\bERROR:\s+[\w.-]+:\s+|\bERROR\s+|\bnhc(?:\[\d+\])?:\s+|^(?=Health check failed:\s+check_\w+:))"
    r"Health check failed:\s+(.*?)\s*$"
)
_RETURNED = re.compile(r"\bNode Health Check failed\.\s+Check (\S+)(.*?) returned (\d+)\s*$")
_CHECK_RETURNED = re.compile(r"^Check (\S+)(.*?) returned (\d+)\.?$")  # "Check check_nv_gpu_count 2 returned 1"
_NAMED = re.compile(r"^(check_\w+|\w+\.nhc):\s+(.*)$")  # "check_hw_ib:  No IB port is ACTIVE"
_CONTEXT = re.compile(r"^[A-Za-z][^`$#>]{2,200}$")  # a site check's own message line (not a fence or a prompt)
_COUNT = re.compile(r"\bERROR:?\s+[\w.-]+:\s+(\d+) health checks? failed\.")


@outside("nhc")
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """A line of NHC's failure report (``Health check failed:`` or ``Node Health Check failed.``)."""
    line = lines[i]
    return ("Health check failed:" in line and bool(_FAILED.search(line))) or bool(_RETURNED.search(line))


def _returned(m: re.Match[str]) -> str:
    """The detail of a ``Check CHECK ARGS returned N``: its arguments and the code (``2 returned 1``)."""
    return f"{m.group(2).strip()} returned {m.group(3)}".strip()


def parse_nhc(text: str, source: str, first_line: int = 1) -> Rig:
    """The failed checks of an NHC log or run, one ``HealthCheck`` per distinct check and message (a check that
    failed on every run of a log is one failure, its count in the detail)."""
    rig = Rig()
    seen: dict[tuple[str, str], HealthCheck] = {}
    # times each failure was reported: by its die() lines, else (a grep of the log) by its "returned" lines
    died: dict[tuple[str, str], int] = {}
    returned_lines: dict[tuple[str, str], int] = {}
    context: list[str] = []  # a site check's own lines before its failure ("Found XID errors: 63")
    for k, raw in enumerate(text.splitlines()):
        line = raw.strip()
        m = _FAILED.search(line)
        r = _RETURNED.search(line)
        if m is None and r is None:
            if _CONTEXT.match(line) and not _COUNT.search(line):
                context = [*context[-2:], line]
            continue
        if r is not None:
            check, base = r.group(1), _returned(r)
        else:
            message = m.group(1) if m is not None else ""
            if returned := _CHECK_RETURNED.match(message):
                check, base = returned.group(1), _returned(returned)
            elif named := _NAMED.match(message):
                check, base = named.group(1), named.group(2)
            else:
                check, base = "", message
        if not check and not base:
            continue
        said = f" ({'; '.join(context)})" if context and "returned" in base else ""  # the check's own lines
        key = (check, base)
        tally = returned_lines if r is not None else died
        tally[key] = tally.get(key, 0) + 1
        if key not in seen:
            seen[key] = HealthCheck(TOOL, check, "fail", base + said, [], None, f"{source}:{first_line + k}")
        elif said and seen[key].detail == base:  # a repeat shows the check's own line above it
            seen[key].detail = base + said
        context = []
    if not seen:
        raise ImportParseError(source, first_line, "NHC output without a failed check")
    for key, hc in seen.items():
        times = died.get(key) or returned_lines.get(key, 0)
        if times > 1:
            hc.detail += f" (reported {times} times)"
    rig.node.health_checks = list(seen.values())
    return rig


# NVSentinel's node condition (its platform connector's message of a DCGM health-watch failure): "ErrorCode:CODE
# GPU:N [PCI:BUS] MESSAGE Recommended Action=ACTION;", the message as DCGM's error table words it (dcgm_errors.h),
# as `kubectl describe node` prints it (wrapped onto the next lines) or one line per failure
SENTINEL = "NVSentinel"
_SENTINEL = re.compile(r"^\W*ErrorCode:(DCGM_FR_\w+|[A-Z][A-Z0-9_]{2,60})(?:\s|$)")
_SENTINEL_GPU = re.compile(r"^GPU:(\d{1,3})\s*(?:PCI:\S+\s*)?")
_ACTION = re.compile(r"Recommended Action=(\w+);?")


def starts_sentinel(lines: list[str], i: int, current: Section | None) -> bool:
    """``ErrorCode:DCGM_FR_IMEX_UNHEALTHY GPU:0 ...``: an NVSentinel node condition's message."""
    return bool(_SENTINEL.match(lines[i])) and (current is None or current.kind != "nvsentinel")


def parse_sentinel(text: str, source: str, first_line: int = 1) -> Rig:
    """Each ``ErrorCode:`` message (its wrapped lines to ``Recommended Action=...;``) as another checker's verdict:
    the DCGM error code is the check, the GPU it names, NVSentinel's recommended action in the detail."""
    rig = Rig()
    checks: list[HealthCheck] = []
    lines = text.splitlines()
    for k, line in enumerate(lines):
        m = _SENTINEL.match(line)
        if m is None:
            continue
        said = [line[m.end() :].strip()]
        for more in lines[k + 1 : k + 6]:  # the message wrapped until its "Recommended Action=...;"
            if _ACTION.search(said[-1]) or _SENTINEL.match(more) or not more.strip() or more.lstrip()[:3] == "```":
                break
            said.append(more.strip())
        detail = " ".join(said)
        gpu = _SENTINEL_GPU.match(detail)
        detail = detail[gpu.end() :] if gpu else detail
        checks.append(HealthCheck(SENTINEL, m.group(1), "fail", detail, [int(gpu.group(1))] if gpu else [], None,
                                  f"{source}:{first_line + k}"))  # fmt: skip
    rig.node.health_checks = checks
    return rig
