"""Entry point of a benchmark worker process: ``python -m gpuadvisor.bench.worker CONFIG.json``.

The supervisor (``launcher``) writes the config, sets RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT for
collective workers, and reads the events the worker appends to ``config["events"]``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import traceback

PARENT_ENV = "GPUADVISOR_BENCH_PARENT"  # the supervisor's pid: a worker never outlives it


def die_with_parent() -> None:
    """Have the kernel SIGKILL this worker when its supervisor exits, however it exits (killed, crashed, a
    second Ctrl-C during cleanup): workers run in their own sessions, so no terminal signal reaches them."""
    expected = os.environ.get(PARENT_ENV)
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG (linux/prctl.h)
        except (OSError, AttributeError):
            pass
    if expected and expected.isdigit() and os.getppid() != int(expected):
        os._exit(1)  # the supervisor is already gone (it died before the line above ran)


def main(argv: list[str] | None = None) -> int:
    die_with_parent()
    import faulthandler

    faulthandler.enable(file=sys.stderr)  # a native crash (SIGSEGV, SIGABRT, ...) leaves its Python stack in the log
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m gpuadvisor.bench.worker CONFIG.json", file=sys.stderr)
        return 2
    cfg: dict = {}
    try:
        with open(args[0], encoding="utf-8") as f:
            cfg = json.load(f)
        if cfg["role"] == "collectives":
            from gpuadvisor.bench import collectives

            return collectives.run(cfg)
        if cfg["role"] == "copies":
            from gpuadvisor.bench import copies

            return copies.run(cfg)
        if cfg["role"] == "compute":
            from gpuadvisor.bench import compute

            return compute.run(cfg)
        print(f"unknown worker role {cfg['role']!r}", file=sys.stderr)
        return 2
    except BaseException as e:  # noqa: BLE001 - every way out says why (KeyboardInterrupt, SystemExit included)
        if isinstance(e, SystemExit) and e.code in (0, None):
            return 0
        traceback.print_exc()
        from gpuadvisor.bench.deaths import write_record

        write_record(e)
        if cfg.get("events") and os.environ.get("RANK", "0") == "0":
            from gpuadvisor.bench.events import EventWriter

            w = EventWriter(cfg["events"])
            w.emit("error", text=f"{e.__class__.__name__}: {e}".splitlines()[0][:300])
            w.close()
        return 1


if __name__ == "__main__":
    sys.exit(main())
