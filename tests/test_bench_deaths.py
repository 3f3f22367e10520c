"""Every way a benchmark worker dies says why: a Python exception, a signal (an OOM kill is a SIGKILL), an exit
code, a port already taken; in the run's error and so in Measurement.error."""

from __future__ import annotations

import signal
import socket
from pathlib import Path

import pytest

from gpuadvisor.bench import Preset, deaths, run_benchmarks
from gpuadvisor.facts import Rig

TINY = Preset(
    "tiny",
    min_bytes=4096,
    max_bytes=4096,
    warmup_iters=1,
    iters=3,
    copy_bytes=1 << 20,
    copies_per_run=1,
    copy_runs=1,
    latency_reps=1,
    budget_s=60.0,
)


@pytest.fixture
def local(monkeypatch):
    for v in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "GPUADVISOR_BENCH_FAULT"):
        monkeypatch.delenv(v, raising=False)
    return monkeypatch


def _broadcast_error(fault: str, monkeypatch) -> str:
    monkeypatch.setenv("GPUADVISOR_BENCH_FAULT", fault)
    ms = run_benchmarks(Rig(), preset=TINY, backend="gloo", nproc=2, only="all_reduce,broadcast")
    by = {m.kind: m for m in ms}
    assert by["all_reduce"].status == "ok"
    assert by["broadcast"].status == "failed"
    assert by["broadcast"].error
    return by["broadcast"].error.removeprefix("not measured: ")  # rank 0 dead before it began: not measured


def test_a_worker_that_raises_names_its_exception(local):
    err = _broadcast_error("raise:1:broadcast", local)
    assert err.startswith(
        "rank 1 exited with status 1: RuntimeError: injected fault: rank 1 raised on reaching "
        "broadcast (at collectives.py:"
    ), err
    assert "its last status: finished all_reduce" in err


def test_a_worker_killed_by_a_signal_says_which_and_the_likely_cause(local):
    err = _broadcast_error("kill:0:broadcast", local)
    assert err.startswith("rank 0 killed by SIGKILL (signal 9): "), err
    assert "out-of-memory killer" in err  # SIGKILL: the OOM killer or a kill -9, said as such
    assert "its last status: finished all_reduce" in err


def test_a_worker_that_exits_with_a_code_says_so(local):
    err = _broadcast_error("die:1:broadcast", local)
    assert err.startswith("rank 1 exited with status 3: no Python exception and nothing on its output"), err


def test_port_in_use_is_named(local, tmp_path):
    """Joining a job whose MASTER_PORT another process holds: the error says the port is taken."""
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    port = holder.getsockname()[1]
    try:
        local.setenv("RANK", "0")
        local.setenv("WORLD_SIZE", "1")
        local.setenv("MASTER_ADDR", "127.0.0.1")
        local.setenv("MASTER_PORT", str(port))
        (m,) = run_benchmarks(Rig(), preset=TINY, backend="gloo", only="all_reduce")
    finally:
        holder.close()
    assert m.status == "failed"
    assert m.error.startswith(
        "not measured: rank 0 exited with status 1: port in use: another process holds the rendezvous port"
    ), m.error
    assert f"MASTER_PORT {port} on 127.0.0.1: address already in use" in m.error


@pytest.mark.parametrize(
    "text, cause",
    [
        (
            "The server socket has failed to listen on any local network address. port: 29500, useIpv6: 0, code: -98, "
            "name: EADDRINUSE, message: address already in use",
            "port in use",
        ),
        (
            "The client socket has timed out after 1800000ms while trying to connect to (10.0.0.1, 29500).",
            "could not reach the other ranks in time",
        ),
        (
            "Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error",
            "could not reach the other ranks in time",
        ),
        (
            "[../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [127.0.0.1]:4242",
            "a peer rank went away first",
        ),
        ("CUDA out of memory. Tried to allocate 2.00 GiB", "out of memory"),
        ("something else entirely", None),
    ],
)
def test_known_failure_texts_are_classified(text, cause):
    got = deaths.classify(text)
    assert (got if cause is None else (got or "").startswith(cause)) == (None if cause is None else True)


def test_oom_kill_counter_names_the_oom_killer():
    text = deaths.explain(
        -int(signal.SIGKILL), record=None, tail=[], status="in all_gather at 1048576 B", oom_before=3, oom_after=4
    )
    assert text == (
        "killed by SIGKILL (signal 9): the kernel's out-of-memory killer (this cgroup's memory.events "
        "oom_kill rose from 3 to 4 during the run); its last status: in all_gather at 1048576 B"
    )


def test_native_abort_quotes_the_last_output_lines(tmp_path):
    log = Path(tmp_path / "w.log")
    log.write_text(
        "UserWarning: numpy\n  warnings.warn(\nterminate called after throwing an instance of "
        "'gloo::IoException'\n  what():  [pair.cc:446] Connection reset by peer\nFatal Python error: Aborted\n"
    )
    text = deaths.explain(-int(signal.SIGABRT), record=None, tail=deaths.log_tail(log), status="")
    assert text.startswith(
        "killed by SIGABRT (signal 6): a peer rank went away first; terminate called after "
        "throwing an instance of 'gloo::IoException' | what():  [pair.cc:446] Connection reset by peer"
        " | Fatal Python error: Aborted"
    ), text
