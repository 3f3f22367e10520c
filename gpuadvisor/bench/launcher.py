"""Start benchmark workers and watch them: one process per device on 127.0.0.1, or this rank of a job.

Each worker runs in its own session (``start_new_session``), so killing its process group takes any child
with it. The supervisor polls the workers and their event file; at the hard deadline, or a few seconds after
one worker dies (the others would wait for it forever), every group still alive gets SIGTERM, then SIGKILL.
What the workers wrote before that stays in the event file.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gpuadvisor
from gpuadvisor.bench.events import EventReader

JOIN_VARS = ("RANK", "WORLD_SIZE", "MASTER_ADDR")
DEATH_GRACE_S = 3.0  # after one worker fails, how long the others get to finish on their own
KILL_GRACE_S = 1.0  # SIGTERM to SIGKILL


def join_env(env: dict[str, str] | None = None) -> dict[str, str] | None:
    """RANK, WORLD_SIZE, MASTER_ADDR (and MASTER_PORT, LOCAL_RANK) when run inside torchrun or Slurm."""
    env = dict(os.environ if env is None else env)
    if not all(env.get(v) for v in JOIN_VARS):
        return None
    out = {v: env[v] for v in JOIN_VARS}
    out["MASTER_PORT"] = env.get("MASTER_PORT", "29500")
    for v in ("LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        if env.get(v):
            out[v] = env[v]
    return out


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on host right now (the OS picks it; rank 0's TCPStore binds it moments later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@dataclass
class Outcome:
    status: str  # ok | failed | timeout
    error: str | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    wall_s: float = 0.0


def _tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    keep = [ln.strip() for ln in text.splitlines()[-lines:] if ln.strip()]
    keep = [ln for ln in keep if "Warning" not in ln and not ln.startswith(("warnings.", "cpu = "))]
    return keep[-1][:300] if keep else ""


def _kill_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def _package_root() -> str:
    return str(Path(gpuadvisor.__file__).resolve().parent.parent)


def supervise(
    role: str,
    cfg: dict[str, Any],
    workdir: Path,
    *,
    nproc: int,
    hard_deadline: float,
    join: dict[str, str] | None = None,
    on_events: Callable[[list[dict[str, Any]]], None] | None = None,
) -> Outcome:
    """Run ``nproc`` workers of ``role`` (or this rank of a joined job) until they end or the deadline."""
    started = time.time()
    events_path = workdir / f"{role}.events.jsonl"
    events_path.touch()
    cfg = {**cfg, "role": role, "events": str(events_path)}
    cfg_path = workdir / f"{role}.json"
    cfg_path.write_text(json.dumps(cfg), encoding="utf-8")
    base = dict(os.environ)
    base["PYTHONPATH"] = os.pathsep.join(p for p in (_package_root(), base.get("PYTHONPATH", "")) if p)
    base.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    base.setdefault("PYTHONWARNINGS", "ignore")
    if role == "collectives":
        if join is not None:
            envs = [{**base, **join}]
        else:
            port = str(free_port())
            envs = [{**base, "RANK": str(r), "WORLD_SIZE": str(nproc), "LOCAL_RANK": str(r),
                     "LOCAL_WORLD_SIZE": str(nproc), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port}
                    for r in range(nproc)]
    else:
        envs = [{k: v for k, v in base.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}]
    procs: list[subprocess.Popen[bytes]] = []
    logs: list[Path] = []
    for i, env in enumerate(envs):
        log = workdir / f"{role}.{i}.log"
        logs.append(log)
        with open(log, "wb") as out:
            procs.append(subprocess.Popen([sys.executable, "-m", "gpuadvisor.bench.worker", str(cfg_path)],
                                          env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                          start_new_session=True))
    reader = EventReader(events_path)
    all_events: list[dict[str, Any]] = []

    def pump() -> None:
        new = reader.read_new()
        if new:
            all_events.extend(new)
            if on_events is not None:
                on_events(new)

    status, error = "ok", None
    first_death: float | None = None
    try:
        while True:
            pump()
            codes = [p.poll() for p in procs]
            if all(c is not None for c in codes):
                bad = [(i, c) for i, c in enumerate(codes) if c != 0]
                if bad:
                    status, error = "failed", _death_message(role, bad, logs, all_events)
                break
            now = time.time()
            dead = [(i, c) for i, c in enumerate(codes) if c not in (None, 0)]
            if dead and first_death is None:
                first_death = now
            if first_death is not None and now - first_death > DEATH_GRACE_S:
                status, error = "failed", _death_message(role, dead, logs, all_events)
                break
            if now >= hard_deadline:
                alive = [str(i) for i, c in enumerate(codes) if c is None]
                who = "rank " if role == "collectives" else "worker "
                status = "timeout"
                error = (f"time budget ran out after {now - started:.1f} s; killed {who}"
                         f"{', '.join(alive)} (hung or too slow)")
                break
            time.sleep(0.05)
    finally:
        live = [p for p in procs if p.poll() is None]
        for p in live:
            _kill_group(p, signal.SIGTERM)
        end = time.time() + KILL_GRACE_S
        while any(p.poll() is None for p in live) and time.time() < end:
            time.sleep(0.02)
        for p in live:
            if p.poll() is None:
                _kill_group(p, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=5)
    pump()
    return Outcome(status=status, error=error, events=all_events, wall_s=time.time() - started)


def _death_message(role: str, dead: list[tuple[int, int | None]], logs: list[Path],
                   events: list[dict[str, Any]]) -> str:
    i, code = dead[0]
    who = f"rank {i}" if role == "collectives" else f"{role} worker"
    reason = next((e.get("text") for e in events if e.get("ev") == "error"), None) or _tail(logs[i])
    how = f"killed by signal {-code}" if code is not None and code < 0 else f"exited with status {code}"
    return f"{who} {how}" + (f": {reason}" if reason else "")
