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
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
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
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "GLOO_SOCKET_IFNAME",
                                                             "GPUADVISOR_BENCH_FAULT")}
    # long enough to be sampled many times: 64 MiB all-reduces, 30 iterations each
    proc = subprocess.Popen([sys.executable, "-m", "gpuadvisor", "bench", "--backend", "gloo", "--nproc", "2",
                             "--only", "all_reduce", "-b", "1M", "-e", "32M", "-n", "20", "-w", "1", "--budget", "60"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=tmp_path)
    seen: list[tuple[int, str, int]] = []
    samples_with_workers = 0
    try:
        while proc.poll() is None:
            kids = _children(proc.pid)
            socks = listening([proc.pid, *kids])
            if len(kids) >= 2 and socks:
                samples_with_workers += 1
            seen += socks
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
    assert proc.returncode == 0, proc.stderr.read().decode()[-2000:] if proc.stderr else ""
    assert samples_with_workers >= 3, "the workers were never seen listening: nothing was checked"
    wide = sorted({(a, p) for _, a, p in seen if not _is_loopback(a)})
    assert wide == [], f"listening beyond loopback: {wide}"
