"""Start benchmark workers and watch them: one process per device on this machine, or this rank of a job.

What a run opens on the network. A local run (no RANK / WORLD_SIZE / MASTER_ADDR) listens on loopback only:
the ranks meet through a FileStore in the run's private temporary directory (no TCPStore port at all), and gloo
and NCCL are told to use the loopback interface (GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME). A multi-node run
(inside torchrun or Slurm) listens where the job says: rank 0's TCPStore on MASTER_ADDR:MASTER_PORT only (or
torchrun's own store), gloo and NCCL on the interface named with ``--interface`` (else GLOO_SOCKET_IFNAME /
NCCL_SOCKET_IFNAME as set, else the interface of the host name, their default).

Each worker runs in its own session (``start_new_session``), so killing its process group takes any child
with it, and the kernel kills it if the supervisor dies (``worker.die_with_parent``). The supervisor polls the
workers and their event file; at the hard deadline, or a few seconds after one worker dies (the others would
wait for it forever), or on Ctrl-C or SIGTERM, every group still alive gets SIGTERM, then SIGKILL. What the
workers wrote before that stays in the event file.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gpuadvisor
from gpuadvisor.bench import deaths
from gpuadvisor.bench.events import EventReader

JOIN_VARS = ("RANK", "WORLD_SIZE", "MASTER_ADDR")
DEATH_GRACE_S = 3.0  # after one worker fails, how long the others get to finish on their own
KILL_GRACE_S = 1.0  # SIGTERM to SIGKILL
STATUS_ENV = "GPUADVISOR_BENCH_STATUS"  # file where a worker keeps one line saying what it is doing
STORE_ENV = "GPUADVISOR_BENCH_STORE"  # local runs: the FileStore path the ranks meet through (no TCP port)


def loopback_interface() -> str:
    """The name of the interface carrying 127.0.0.1 ("lo" on Linux)."""
    try:
        import psutil

        for name, addrs in psutil.net_if_addrs().items():
            if any(getattr(a, "address", None) == "127.0.0.1" for a in addrs):
                return name
    except (ImportError, OSError):
        pass
    return "lo"


def local_bind_env() -> dict[str, str]:
    """Environment that keeps gloo and NCCL of a single-machine run on loopback."""
    lo = loopback_interface()
    return {"GLOO_SOCKET_IFNAME": lo, "NCCL_SOCKET_IFNAME": lo}


def interface_env(interface: str) -> dict[str, str]:
    """A multi-node run bound to the named interface: gloo's device and NCCL's bootstrap and sockets."""
    return {"GLOO_SOCKET_IFNAME": interface, "NCCL_SOCKET_IFNAME": interface}


def set_status(text: str) -> None:
    """Worker side: overwrite the status line the supervisor quotes if it has to kill this worker."""
    path = os.environ.get(STATUS_ENV)
    if not path:
        return
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text + "\n")
    os.replace(tmp, path)


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
    status: str  # ok | failed | timeout | interrupted
    error: str | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    wall_s: float = 0.0
    signum: int | None = None  # the signal that interrupted the run


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) or SIGTERM during a benchmark run; ``measurements`` holds what was measured before it.

    A KeyboardInterrupt, so a caller that does not look for it stops as on any Ctrl-C."""

    def __init__(self, signum: int, measurements: list[Any] | None = None) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.measurements = measurements or []


def _raise_interrupted(signum: int, frame: Any) -> None:
    raise Interrupted(signum)


@contextlib.contextmanager
def _sigterm_interrupts() -> Any:
    """SIGTERM (kill, Slurm at its time limit, systemd) raises ``Interrupted`` like Ctrl-C, so workers are killed
    and the results so far kept; only in the main thread and where nobody else handles SIGTERM."""
    old = None
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        old = signal.signal(signal.SIGTERM, _raise_interrupted)
    try:
        yield
    finally:
        if old is not None:
            signal.signal(signal.SIGTERM, old)


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
    interface: str | None = None,
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
    base["GPUADVISOR_BENCH_PARENT"] = str(os.getpid())
    base.pop(STORE_ENV, None)
    if role == "collectives":
        if join is not None:
            envs = [{**base, **join, **(interface_env(interface) if interface else {})}]
        else:
            # loopback only: a FileStore in this run's private directory (0700), gloo/NCCL on the lo interface
            store = workdir / f"{role}.store"
            envs = [
                {
                    **base,
                    **local_bind_env(),
                    "RANK": str(r),
                    "WORLD_SIZE": str(nproc),
                    "LOCAL_RANK": str(r),
                    "LOCAL_WORLD_SIZE": str(nproc),
                    "MASTER_ADDR": "127.0.0.1",
                    STORE_ENV: str(store),
                }
                for r in range(nproc)
            ]
            for e in envs:
                e.pop("MASTER_PORT", None)
    else:
        envs = [{k: v for k, v in base.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}]
    procs: list[subprocess.Popen[bytes]] = []
    logs: list[Path] = []
    for i, env in enumerate(envs):
        env[STATUS_ENV] = str(workdir / f"{role}.{i}.status")
        env[deaths.RECORD_ENV] = str(workdir / f"{role}.{i}.death.json")
        log = workdir / f"{role}.{i}.log"
        logs.append(log)
        with open(log, "wb") as out:
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "gpuadvisor.bench.worker", str(cfg_path)],
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            )
    reader = EventReader(events_path)
    all_events: list[dict[str, Any]] = []

    def pump() -> None:
        new = reader.read_new()
        if new:
            all_events.extend(new)
            if on_events is not None:
                on_events(new)

    status, error, signum = "ok", None, None
    oom_before = deaths.cgroup_oom_kills()
    died: list[tuple[int, int]] = []  # (worker, exit status) in the order the failures were seen
    try:
        with _sigterm_interrupts():
            status, error = _watch(
                role, procs, logs, workdir, all_events, pump, died, started, hard_deadline, oom_before
            )
    except KeyboardInterrupt as e:
        signum = getattr(e, "signum", int(signal.SIGINT))
        alive = [i for i, p in enumerate(procs) if p.poll() is None]
        status = "interrupted"
        error = f"interrupted by {signal.Signals(signum).name} after {time.time() - started:.1f} s" + (
            f"; killed {_who(role, alive, workdir, why='')}" if alive else ""
        )
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
    return Outcome(status=status, error=error, events=all_events, wall_s=time.time() - started, signum=signum)


def _watch(
    role: str,
    procs: list[subprocess.Popen[bytes]],
    logs: list[Path],
    workdir: Path,
    all_events: list[dict[str, Any]],
    pump: Callable[[], None],
    died: list[tuple[int, int]],
    started: float,
    hard_deadline: float,
    oom_before: int | None = None,
) -> tuple[str, str | None]:
    """Poll until every worker ended, one failed (and the others had their grace), or the deadline."""
    first_death: float | None = None
    while True:
        pump()
        codes = [p.poll() for p in procs]
        fresh = [(i, c) for i, c in enumerate(codes) if c not in (None, 0) and i not in {d[0] for d in died}]
        died += sorted(
            fresh, key=lambda ic: _is_secondary(logs[ic[0]], deaths.read_record(workdir / f"{role}.{ic[0]}.death.json"))
        )
        now = time.time()
        if all(c is not None for c in codes):
            return (
                ("failed", _death_message(role, died, logs, all_events, workdir, oom_before)) if died else ("ok", None)
            )
        if died and first_death is None:
            first_death = now
        if first_death is not None and now - first_death > DEATH_GRACE_S:
            return "failed", _death_message(role, died, logs, all_events, workdir, oom_before)
        if now >= hard_deadline:
            alive = [i for i, c in enumerate(codes) if c is None]
            return "timeout", f"time budget ran out after {now - started:.1f} s; killed {_who(role, alive, workdir)}"
        time.sleep(0.05)


def _is_secondary(log: Path, record: dict[str, Any] | None = None) -> bool:
    """A worker that failed because a peer went away (it is listed after the one that went first)."""
    text = " ".join(deaths.log_tail(log, lines=20))
    if record:
        text += " " + str(record.get("text") or record.get("message") or "")
    return deaths.classify(text) == "a peer rank went away first"


def _who(role: str, alive: list[int], workdir: Path, why: str = " (hung or too slow)") -> str:
    """'rank 0 (in all_gather at 4096 B), rank 1 (finished all_reduce)': where each killed worker last was."""
    parts = []
    for i in alive:
        try:
            where = (workdir / f"{role}.{i}.status").read_text(encoding="utf-8").strip()
        except OSError:
            where = ""
        name = f"rank {i}" if role == "collectives" else f"{role} worker"
        parts.append(f"{name} ({where})" if where else name)
    return ", ".join(parts) + why


def _death_message(
    role: str,
    dead: list[tuple[int, int]],
    logs: list[Path],
    events: list[dict[str, Any]],
    workdir: Path | None = None,
    oom_before: int | None = None,
) -> str:
    """One clause per dead worker, first to die first: how it ended and why (``deaths.explain``)."""
    oom_after = deaths.cgroup_oom_kills() if oom_before is not None else None
    out = []
    for n, (i, code) in enumerate(dead):
        who = f"rank {i}" if role == "collectives" else f"{role} worker"
        record = deaths.read_record(workdir / f"{role}.{i}.death.json") if workdir is not None else None
        tail = deaths.log_tail(logs[i])
        if i == 0 and not record and not tail:
            text = next((e.get("text") for e in events if e.get("ev") == "error"), "") or ""
            tail = [text] if text else []
        status = ""
        if workdir is not None:
            try:
                status = (workdir / f"{role}.{i}.status").read_text(encoding="utf-8").strip()
            except OSError:
                status = ""
        why = deaths.explain(code, record=record, tail=tail, status=status, oom_before=oom_before, oom_after=oom_after)
        out.append(("then " if n else "") + f"{who} {why}")
    return "; ".join(out)
