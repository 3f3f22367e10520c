"""A local bench listens on loopback only: no TCPStore or gloo socket on a routable address (the machine's
other interfaces), while the workers run. Read from /proc/net/tcp{,6} for the workers' own socket inodes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs Linux /proc/net/tcp")

LISTEN = "0A"


def _addr(hex_addr: str) -> str:
    """'0100007F:AB09' -> '127.0.0.1'; IPv6 likewise ('::1', '::', '::ffff:127.0.0.1')."""
    import ipaddress

    host = hex_addr.split(":")[0]
    raw = bytes.fromhex(host)
    if len(raw) == 4:
        return str(ipaddress.IPv4Address(raw[::-1]))
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
    return str(ipaddress.IPv6Address(words))


def listening(pids: list[int]) -> list[tuple[int, str, int]]:
    """(pid, address, port) of every LISTEN TCP socket the given processes hold."""
    inodes: dict[str, int] = {}
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                if target.startswith("socket:["):
                    inodes[target[8:-1]] = pid
        except OSError:
            continue
    out = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            f = line.split()
            if f[3] == LISTEN and f[9] in inodes:
                out.append((inodes[f[9]], _addr(f[1]), int(f[1].split(":")[1], 16)))
    return out


def _children(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            kids = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            continue
        out += [int(k) for k in kids]
        todo += [int(k) for k in kids]
    return out


def _is_loopback(a: str) -> bool:
    import ipaddress

    ip = ipaddress.ip_address(a)
    return ip.is_loopback or (ip.version == 6 and ip.ipv4_mapped is not None and ip.ipv4_mapped.is_loopback)


def test_address_decoding():
    assert _addr("0100007F:AB09") == "127.0.0.1"
    assert _addr("00000000:07E8") == "0.0.0.0"
    assert _addr("00000000000000000000000001000000:1F90") == "::1"
    assert _addr("00000000000000000000000000000000:1F90") == "::"


def test_local_gloo_bench_listens_on_loopback_only(tmp_path):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "GLOO_SOCKET_IFNAME", "GPUADVISOR_BENCH_FAULT")
    }
    # long enough to be sampled many times: 64 MiB all-reduces, 30 iterations each
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gpuadvisor",
            "bench",
            "--backend",
            "gloo",
            "--nproc",
            "2",
            "--only",
            "all_reduce",
            "-b",
            "1M",
            "-e",
            "32M",
            "-n",
            "20",
            "-w",
            "1",
            "--budget",
            "60",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    )
    seen: list[tuple[int, str, int]] = []
    samples_with_workers = 0
    try:
        while proc.poll() is None:
            kids = _children(proc.pid)
            socks = listening([proc.pid, *kids])
            if len(kids) >= 2 and socks:
                samples_with_workers += 1
            seen += socks
            time.sleep(0.01)  # sample often: on an idle machine the workers listen for a fraction of a second
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
    assert proc.returncode == 0, proc.stderr.read().decode()[-2000:] if proc.stderr else ""
    assert samples_with_workers >= 3, "the workers were never seen listening: nothing was checked"
    wide = sorted({(a, p) for _, a, p in seen if not _is_loopback(a)})
    assert wide == [], f"listening beyond loopback: {wide}"


def _sample_listeners(
    cmd: list[str], env: dict[str, str], cwd: Path
) -> tuple[int, list[tuple[int, str, int]], int, str]:
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd)
    seen: list[tuple[int, str, int]] = []
    samples = 0
    try:
        while proc.poll() is None:
            kids = _children(proc.pid)
            socks = listening([proc.pid, *kids])
            if kids and socks:
                samples += 1
            seen += socks
            time.sleep(0.01)  # sample often: on an idle machine the workers listen for a fraction of a second
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
    err = proc.stderr.read().decode() if proc.stderr else ""
    return proc.returncode, seen, samples, err


def test_joined_run_listens_on_master_addr_only(tmp_path):
    """Inside a job (RANK/WORLD_SIZE/MASTER_ADDR set), rank 0's TCPStore listens on MASTER_ADDR's address only,
    not on every interface as torch's own TCPStore server does."""
    from gpuadvisor.bench.launcher import free_port

    port = free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("GLOO_SOCKET_IFNAME", "GPUADVISOR_BENCH_FAULT", "TORCHELASTIC_USE_AGENT_STORE")
    }
    env.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    rc, seen, samples, err = _sample_listeners(
        [
            sys.executable,
            "-m",
            "gpuadvisor",
            "bench",
            "--backend",
            "gloo",
            "--only",
            "all_reduce",
            "-b",
            "1M",
            "-e",
            "32M",
            "-n",
            "60",
            "-w",
            "1",
            "--budget",
            "60",
        ],
        env,
        tmp_path,
    )
    assert rc == 0, err[-2000:]
    assert samples >= 3, "the worker was never seen listening: nothing was checked"
    store = {(a, p) for _, a, p in seen if p == port}
    assert store == {("127.0.0.1", port)}, store
    wide = sorted({(a, p) for _, a, p in seen if not _is_loopback(a)})
    assert wide == [], f"listening beyond loopback: {wide}"


def test_interface_option_is_for_joined_runs_and_must_exist(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR")}
    p = subprocess.run(
        [sys.executable, "-m", "gpuadvisor", "bench", "--interface", "lo", "--only", "all_reduce"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=tmp_path,
    )
    assert p.returncode == 2
    assert p.stderr.strip().splitlines()[-1] == (
        "gpuadvisor: error: --interface applies to a multi-node run (inside "
        "torchrun or Slurm): a local run binds loopback only"
    )
    env.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1")
    p = subprocess.run(
        [sys.executable, "-m", "gpuadvisor", "bench", "--interface", "nosuch0", "--only", "all_reduce"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=tmp_path,
    )
    assert p.returncode == 2
    assert "--interface 'nosuch0': no such network interface here (have: " in p.stderr


def test_local_and_interface_environments():
    from gpuadvisor.bench.launcher import interface_env, local_bind_env, loopback_interface

    lo = loopback_interface()
    assert local_bind_env() == {"GLOO_SOCKET_IFNAME": lo, "NCCL_SOCKET_IFNAME": lo}
    assert interface_env("ib0") == {"GLOO_SOCKET_IFNAME": "ib0", "NCCL_SOCKET_IFNAME": "ib0"}
