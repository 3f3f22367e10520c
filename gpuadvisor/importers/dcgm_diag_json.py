"""``dcgmi diag -j``: the DCGM diagnostic's results as JSON, whole or (as people paste it) elided and cut.

DCGM 3 (nvvs's JsonOutput.h) writes ``{"DCGM GPU Diagnostic" : {"test_categories" : [{"category" : "Deployment",
"tests" : [{"name" : "Denylist", "results" : [{"gpu_ids" : "0,1", "status" : "Pass"}]}, ...]}, ...], "version" :
"3.3.9", "Driver Version Detected" : "..."}}``: a category (Deployment, Integration, Hardware, Stress), its tests,
each with one result per GPU (``gpu_id`` or ``gpu_ids``; one result for all GPUs in the deployment tests), its status
(Pass, Fail, Warn, Skip; PASS, FAIL, WARN, SKIPPED in older releases) and, for a test that did not pass, its
``warnings`` (``{"warning" : "...", "error_id" : 83}`` or plain strings). DCGM 4 names the object ``"DCGM
Diagnostic"``, its results ``entity_group`` / ``entity_id`` (NVIDIA DCGM release notes, 4.0: breaking changes).

The JSON is read key by key in the order it is printed, not parsed as a document, so a paste elided by hand
(``{"..."}``) or cut in a key is read as far as it goes. Read: each test's verdict per GPU as dcgmi diag's result
box is (importers/dcgm.py): a test that failed or warned is a ``HealthCheck`` with its category and warning; the
verdicts as a note; a run whose every test shown was skipped is said to be one: no diagnostic ran, so the GPU is
shown neither healthy nor faulty.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import HealthCheck, Rig
from gpuadvisor.importers.dcgm import TOOL
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.section import Section, clean_lines, outside, outside_log

WHAT = "dcgmi diag -j (DCGM diagnostic, JSON)"
_START = re.compile(r'^\s*(?:\{\s*)?"(?:DCGM GPU Diagnostic|DCGM Diagnostic)"\s*:')
_CATEGORIES = re.compile(r'^\s*"test_categories"\s*:')
# a key and its string or number value
_PAIR = re.compile(r'"(\w[\w ]{0,40})"\s*:\s*(?:"((?:[^"\\\n]|\\.){0,2000})"|(-?\d{1,12})\b)')
_STATUS = {"pass": "Pass", "fail": "Fail", "warn": "Warn", "skip": "Skip", "skipped": "Skip", "not run": "Skip"}
_LONGEST = 20000


@outside("dcgm-json")
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """``"DCGM GPU Diagnostic" :`` (DCGM 4: ``"DCGM Diagnostic" :``), or ``"test_categories" :`` (the object's
    name not pasted), or the brace over it, outside a log."""
    if not outside_log(current):
        return False
    if lines[i].strip() == "{" and i + 1 < len(lines):  # the document's brace over its object's name
        return bool(_START.match(lines[i + 1]))
    return bool(_START.match(lines[i]) or _CATEGORIES.match(lines[i]))


def _gpus(value: str) -> list[int]:
    return [int(x) for x in re.findall(r"\d+", value)]


def parse(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """Each test's verdict (see the module's text)."""
    rig = Rig()
    category = test = ""
    results: list[tuple[str, str, list[int], str, int]] = []  # category, test, GPUs, verdict, line
    gpus: list[int] = []
    warned: dict[int, str] = {}
    lines = clean_lines(text)
    cut = not text.endswith(("\n", "\r"))
    for k, line in enumerate(lines):
        if len(line) > _LONGEST or (cut and k == len(lines) - 1):
            continue
        for key, value, number in _PAIR.findall(line):
            value = value or number
            if key == "category":
                category = value
            elif key == "name":
                test, gpus = value, []
            elif key in ("gpu_id", "gpu_ids", "entity_id"):
                gpus = _gpus(value)
            elif key == "status" and value.lower() in _STATUS:
                results.append((category, test, gpus, _STATUS[value.lower()], first_line + k))
            elif key == "warning" and results:  # the result's warning (its status printed before it)
                warned.setdefault(len(results) - 1, value.replace('\\"', '"'))
            elif key in ("Driver Version Detected", "driver_version_detected") and not rig.software.driver_version:
                rig.software.driver_version = value
                rig.origins["software.driver_version"] = f"{source}:{first_line + k}"
    if not results:
        raise ImportParseError(source, first_line, f"{WHAT}: no test result shown")
    checks = [
        HealthCheck(TOOL, name, verdict.lower(), warned.get(i, ""), on, cat or None, f"{source}:{lineno}")
        for i, (cat, name, on, verdict, lineno) in enumerate(results)
        if verdict in ("Fail", "Warn") and name
    ]
    if checks:
        rig.node.health_checks = checks
    verdicts: dict[tuple[str, str], list[int]] = {}  # a test's verdict over the GPUs it was given for, in order
    for _, name, on, verdict, _ in results:
        shown = verdicts.setdefault((name or "?", verdict), [])
        shown += [g for g in on if g not in shown]
    told = "; ".join(
        f"{name}: {v}" + (f" on GPU {', '.join(map(str, on))}" if on else "") for (name, v), on in verdicts.items()
    )
    rig.problems.append(f"{source}: line {results[0][4]}: {TOOL} (JSON): {told}")
    if all(v == "Skip" for *_, v, _ in results):
        shown = sorted({g for _, _, on, _, _ in results for g in on})
        rig.problems.append(
            f"{source}: line {results[0][4]}: {TOOL}: no diagnostic ran: every test shown ({len(results)}) was "
            f"skipped{' on GPU ' + ', '.join(map(str, shown)) if shown else ''}, so the GPU is shown neither healthy "
            "nor faulty; find why the tests skip (a GPU model the test does not support, a parameter it needs, "
            "nvvs.log) and rerun (NVIDIA DCGM User Guide: dcgmi diag)"
        )
    return rig
