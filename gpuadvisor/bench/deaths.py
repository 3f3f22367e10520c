"""Why a benchmark worker died, in words: its Python exception, the signal or exit code, and what it was doing.

The worker writes a small JSON record (``write_record``) when it ends with an exception, before exiting; the
supervisor reads it (``read_record``) and builds one line per dead worker (``explain``) from, in order: that
record, the last meaningful lines of the worker's output (a C++ abort, a fatal-signal traceback from
faulthandler), the signal (SIGKILL with the cgroup's OOM-kill counter, so an out-of-memory kill is named as
such), and the status line the worker kept. Known failure texts are classified (port in use, gloo connect
timeout, a peer gone, out of memory) so the cause reads first.
"""

from __future__ import annotations

import json
import os
import re
import signal
import traceback
from pathlib import Path
from typing import Any

RECORD_ENV = "GPUADVISOR_BENCH_DEATH"  # file where a dying worker leaves its exception

# (pattern, cause): first match wins; texts as torch, gloo, the TCPStore and NCCL print them
_CAUSES: tuple[tuple[str, str], ...] = (
    (
        r"EADDRINUSE|address already in use|failed to listen",
        "port in use: another process holds the rendezvous port (pick another MASTER_PORT)",
    ),
    (r"out of memory|OutOfMemoryError|MemoryError|CUBLAS_STATUS_ALLOC_FAILED", "out of memory"),
    (
        r"client socket has timed out|timed out after \d+ms while trying to connect|connectFullMesh|"
        r"Connection refused|Timed out waiting|Connection timed out|Socket Timeout",
        "could not reach the other ranks in time (gloo/TCPStore connect timeout or refusal: a loaded machine, a "
        "firewall, or a rank that never started)",
    ),
    (
        r"closed by peer|reset by peer|Broken pipe|remote worker crash|NCCL communicator was aborted",
        "a peer rank went away first",
    ),
)


def classify(text: str) -> str | None:
    """The cause a failure text points to, or None."""
    for pattern, cause in _CAUSES:
        if re.search(pattern, text, re.IGNORECASE):
            return cause
    return None


def write_record(exc: BaseException, path: str | None = None) -> None:
    """Worker side: leave the exception for the supervisor (type, first line, last frames). Never raises."""
    path = path or os.environ.get(RECORD_ENV)
    if not path:
        return
    frames = traceback.extract_tb(exc.__traceback__)[-3:]
    rec = {
        "type": exc.__class__.__name__,
        "message": (str(exc).strip().splitlines() or [""])[0][:400],
        "text": str(exc)[:2000],
        "frames": [f"{Path(f.filename).name}:{f.lineno} in {f.name}" for f in frames],
    }
    try:
        tmp = f"{path}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(rec, f)
        os.replace(tmp, path)
    except OSError:
        pass


def read_record(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


_NOISE = ("Warning", "warnings.warn", "warnings.", "cpu = ", "Traceback (most recent call last)")


def log_tail(path: Path, lines: int = 3) -> list[str]:
    """The last meaningful lines of a worker's output (warnings and traceback headers left out)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    keep = [ln.strip() for ln in text.splitlines()[-60:] if ln.strip()]
    keep = [ln for ln in keep if not any(n in ln for n in _NOISE) and not ln.startswith("^")]
    return [ln[:300] for ln in keep[-lines:]]


def cgroup_oom_kills() -> int | None:
    """The oom_kill counter of this process's cgroup (v2 memory.events), or None where it cannot be read."""
    try:
        line = next(ln for ln in Path("/proc/self/cgroup").read_text().splitlines() if ln.startswith("0::"))
        events = Path("/sys/fs/cgroup") / line[3:].lstrip("/") / "memory.events"
        for ln in events.read_text().splitlines():
            k, _, v = ln.partition(" ")
            if k == "oom_kill":
                return int(v)
    except (OSError, StopIteration, ValueError):
        return None
    return None


def how(code: int) -> str:
    """'exited with status 3', 'killed by SIGKILL (signal 9)'."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name} (signal {-code})"
    return f"exited with status {code}"


def explain(
    code: int,
    *,
    record: dict[str, Any] | None,
    tail: list[str],
    status: str,
    oom_before: int | None = None,
    oom_after: int | None = None,
) -> str:
    """Why one worker died, for the error text: cause first, then the evidence."""
    parts: list[str] = []
    evidence = ""
    if record:
        msg = str(record.get("message", ""))
        msg = msg if len(msg) <= 200 else msg[:197] + "..."
        evidence = f"{record.get('type', 'Exception')}: {msg}".rstrip(": ")
        if record.get("frames"):
            evidence += f" (at {record['frames'][-1]})"
        cause = classify(f"{record.get('type', '')} {record.get('text') or record.get('message', '')}")
    else:
        evidence = " | ".join(tail)
        cause = classify(evidence) if evidence else None
    if code == -int(signal.SIGKILL):
        if oom_before is not None and oom_after is not None and oom_after > oom_before:
            cause = (
                f"the kernel's out-of-memory killer (this cgroup's memory.events oom_kill rose from "
                f"{oom_before} to {oom_after} during the run)"
            )
        elif cause is None:
            cause = "SIGKILL from outside: the kernel's out-of-memory killer (see dmesg) or a kill -9" + (
                "; this cgroup's oom_kill counter did not rise" if oom_before is not None else ""
            )
    elif code < 0 and cause is None:
        cause = {
            int(signal.SIGSEGV): "a crash in native code (segmentation fault)",
            int(signal.SIGABRT): "an abort in native code (a C++ exception or assertion)",
            int(signal.SIGBUS): "a bus error (often /dev/shm full)",
            int(signal.SIGTERM): "terminated from outside (SIGTERM)",
        }.get(-code)
    elif code > 0 and not record and not tail:
        cause = cause or "no Python exception and nothing on its output (the process ended itself with that code)"
    if cause:
        parts.append(cause)
    if evidence and evidence != cause:
        parts.append(evidence)
    if status:
        parts.append(f"its last status: {status}")
    return f"{how(code)}: " + "; ".join(parts) if parts else how(code)
