"""--redact holds everywhere: identifiers planted in every field and source, every output of every command
that writes grepped for each of them.

The planted scan is the simulated 8x H100 with this site's identifiers put where real scans carry them: the
hostname, GPU UUIDs and serials, the environment (NCCL_COMM_ID, CUDA_VISIBLE_DEVICES and
NVIDIA_VISIBLE_DEVICES with GPU and MIG UUIDs, MASTER_ADDR, a Slurm node list and user, home paths, an env
key holding an address), notes and errors of measurements (other hosts of a multi-node run, an nccl-tests rank
line, IPs, a MAC), problems (IPv6, an InfiniBand GUID, a serial and a board id), origins and source files
(input paths under a home directory), and a finding's message. Imports are real nvidia-smi and multi-node
nccl-tests outputs; the SIGTERM'd benchmark is a live scan with the identifiers in its environment.
"""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpuadvisor.collect import simulate
from gpuadvisor.facts import Finding, Measurement, from_dict
from gpuadvisor.redact import redact

HOST = "gpu-secret-a01.corp.example.com"
UUIDS = [f"GPU-5ec2e7a0-0000-4000-8000-00000000000{i}" for i in range(8)]
SERIALS = [f"16508230123{i:02d}" for i in range(8)]
MIG = "MIG-a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"
HOME = "/home/alice-secret"
PLANTED = [
    "secret",  # every planted host, user and directory name has it
    "gpu-secret-a01",
    "gpu-secret-b02",
    "gpu-secret-c03",
    "gpu-secret-d04",
    "gpu-secret-e05",
    "corp.example.com",
    "10.23.45.67",
    "192.168.77.5",
    "10.99.1.2",
    "fd12:3456:789a::42",
    "2001:db8:85a3:0:0:8a2e:370:7334",
    "0c:42:a1:12:34:56",
    "0c42:a103:00ab:cdef",
    "0x0c42a10300abcdef",
    *(u.removeprefix("GPU-") for u in UUIDS),
    MIG.removeprefix("MIG-"),
    *SERIALS,
    "9999888877776",
    "0xb0a4d1d5",
    "987654321",
    "~carol",
]


def planted_rig():
    rig = simulate("dgx-h100")
    rig.host.hostname = HOST
    for g, u, s in zip(rig.gpus, UUIDS, SERIALS, strict=True):
        g.uuid, g.serial = u, s
    rig.software.env = {
        "NCCL_COMM_ID": "10.23.45.67:29500",
        "CUDA_VISIBLE_DEVICES": f"{UUIDS[0]},{UUIDS[1]}",  # hides 6 GPUs: a finding quotes it
        "NVIDIA_VISIBLE_DEVICES": f"{UUIDS[2]},{MIG}",
        "MASTER_ADDR": "gpu-secret-c03",
        "MASTER_PORT": "29500",
        "SLURM_JOB_NODELIST": "gpu-secret-[a01,b02]",
        "SLURM_JOB_USER": "dave-secret",
        "SLURM_JOB_ID": "987654321",
        "NCCL_DEBUG_FILE": f"{HOME}/logs/nccl.%h.%p.log",
        "CUDA_CACHE_PATH": "~carol-secret/.nv/ComputeCache",
        "NCCL_SOCKET_IFNAME": "=fd12:3456:789a::42",
        "NCCL_X_10.99.1.2": "1",
    }
    rig.source.files = [f"{HOME}/outputs/smi.xml", "/Users/bob-secret/topo.txt"]
    rig.origins = {
        "gpus[0]": f"{HOME}/outputs/smi.xml:12 (nvidia-smi -q -x)",
        "gpus[1]": "/Users/bob-secret/topo.txt:3 (nvidia-smi topo -m)",
    }
    rig.problems = [
        "ssh to host=gpu-secret-d04 failed from 2001:db8:85a3:0:0:8a2e:370:7334",
        "ib0 port guid 0c42:a103:00ab:cdef (node 0x0c42a10300abcdef); Serial Number: 9999888877776; Board ID: "
        "0xb0a4d1d5",
    ]
    rig.measurements = [
        Measurement(
            kind="all_reduce",
            backend="imported",
            provenance="imported",
            world_size=16,
            gpus=list(range(8)),
            value_gbps=480.0,
            status="ok",
            method="nccl-tests all_reduce_perf via 192.168.77.5 (mac 0c:42:a1:12:34:56)",
            error="#  Rank  8 Group  0 Pid   6899 on gpu-secret-e05 device  0 [0000:04:00] NVIDIA H100 80GB HBM3",
            notes=[
                "multi-node run: 2 hosts (gpu-secret-a01, gpu-secret-b02), 16 ranks; gpus lists those of "
                "gpu-secret-a01",
                f"log kept in {HOME}/nccl.log and /Users/bob-secret/x",
            ],
        )
    ]
    rig.findings = [
        Finding(
            code="GA999",
            name="planted",
            area="host",
            severity="warn",
            message=f"{UUIDS[3]} on {HOST} at 10.23.45.67 ({SERIALS[3]})",
            subject=f"host {HOST}",
            observed={"addr": "10.23.45.67", UUIDS[4]: "key"},
        )
    ]
    return rig


def assert_clean(text: str, where: str, also: tuple[str, ...] = ()) -> None:
    low = text.lower()
    left = [p for p in (*PLANTED, *also) if p.lower() in low]
    assert not left, f"{where}: still holds {left}"


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("alice-secret-inputs")
    p = d / "planted.json"
    p.write_text(planted_rig().to_json())
    return p


def gpuadvisor(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    p = subprocess.run(
        [sys.executable, "-m", "gpuadvisor", *args], capture_output=True, text=True, timeout=300, env=env
    )
    assert "Traceback" not in p.stderr, p.stderr
    return p


# -- the model: stable pseudonyms, cross-references kept ---------------------------------------------------


def test_redaction_replaces_every_planted_identifier_with_stable_pseudonyms():
    rig = planted_rig()
    redact(rig)
    text = rig.to_json()
    assert_clean(text, "redacted scan")
    env = rig.software.env
    # Cross-references: GPU 0 and 1's UUIDs in CUDA_VISIBLE_DEVICES, GPU 2's in NVIDIA_VISIBLE_DEVICES.
    assert env["CUDA_VISIBLE_DEVICES"] == "GPU-redacted-0,GPU-redacted-1"
    assert env["NVIDIA_VISIBLE_DEVICES"] == "GPU-redacted-2,MIG-redacted-1"
    assert env["NCCL_COMM_ID"] == "redacted-ip-1:29500"
    assert env["MASTER_ADDR"] == "redacted-host-3" and env["MASTER_PORT"] == "29500"
    assert env["NCCL_DEBUG_FILE"] == "/home/redacted-user-2/logs/nccl.%h.%p.log"
    assert "NCCL_X_redacted-ip-3" in env
    f = rig.findings[0]
    assert f.message == "GPU-redacted-3 on redacted-host-1 at redacted-ip-1 (redacted-serial-4)"
    assert f.observed == {"addr": "redacted-ip-1", "GPU-redacted-4": "key"}
    assert rig.measurements[0].notes[0] == (
        "multi-node run: 2 hosts (redacted-host-2, redacted-host-4), 16 ranks; gpus lists those of redacted-host-2"
    )
    assert rig.source.files == ["smi.xml", "topo.txt"]
    assert rig.origins == {"gpus[0]": "smi.xml:12 (nvidia-smi -q -x)", "gpus[1]": "topo.txt:3 (nvidia-smi topo -m)"}
    # The identifying fields are missing facts with their reason, as the model wants.
    assert rig.host.hostname is None and rig.host.unavailable["hostname"] == "redacted"
    assert all(g.uuid is None and g.unavailable["uuid"] == "redacted" for g in rig.gpus)
    # What is not an identifier stays: bus ids, versions, the matrix, loopback.
    assert rig.gpus[3].bus_id == planted_rig().gpus[3].bus_id
    assert rig.software.driver_version == planted_rig().software.driver_version
    assert from_dict(json.loads(text)).to_json() == text  # still a valid scan


def test_loopback_and_plain_text_are_kept():
    rig = planted_rig()
    rig.software.env = {"MASTER_ADDR": "127.0.0.1", "NCCL_SOCKET_IFNAME": "eth0"}
    rig.problems = ["NVLink 4 at 0000:41:00.0, driver 580.159.04, NVML 12.580.82.07, torch.distributed"]
    redact(rig)
    assert rig.software.env == {"MASTER_ADDR": "127.0.0.1", "NCCL_SOCKET_IFNAME": "eth0"}
    assert rig.problems == ["NVLink 4 at 0000:41:00.0, driver 580.159.04, NVML 12.580.82.07, torch.distributed"]


# -- every command that writes, every format ---------------------------------------------------------------


def test_scan_every_output(planted, tmp_path):
    j, h = tmp_path / "s.json", tmp_path / "s.html"
    p = gpuadvisor(
        "scan", "--from", str(planted), "--redact", "--json", str(j), "--html", str(h), "--model", "llama-3-8b"
    )
    assert p.returncode == 0, p.stderr
    for name, text in (("json", j.read_text()), ("html", h.read_text()), ("text", p.stdout)):
        assert_clean(text, f"scan {name}", (str(planted.parent),))
    assert_clean(p.stderr, "scan stderr")
    assert "GPU-redacted-0,GPU-redacted-1" in p.stdout  # the GA5xx finding quotes CUDA_VISIBLE_DEVICES, redacted
    q = gpuadvisor("scan", "--from", str(planted), "--redact", "--format", "json")
    assert_clean(q.stdout, "scan --format json")
    assert json.loads(q.stdout)["software"]["env"]["CUDA_VISIBLE_DEVICES"] == "GPU-redacted-0,GPU-redacted-1"


@pytest.mark.parametrize("fmt", ["json", "junit", "prom", "text"])
def test_check_every_format(planted, tmp_path, fmt):
    pol = tmp_path / "carol-secret-policies"
    pol.mkdir()
    (pol / "node.toml").write_text('fail_on = "warn"\n')
    out, j = tmp_path / f"r.{fmt}", tmp_path / "c.json"
    p = gpuadvisor(
        "check",
        "--from",
        str(planted),
        "--policy",
        str(pol / "node.toml"),
        "--redact",
        "--format",
        fmt,
        "-o",
        str(out),
        "--json",
        str(j),
    )
    assert p.returncode == 1, p.stderr  # the planted environment hides GPUs: the node fails at fail-on warn
    for name, text in (("-o", out.read_text()), ("--json", j.read_text()), ("stdout", p.stdout)):
        assert_clean(text, f"check {fmt} {name}", (str(tmp_path),))
    assert "node.toml" in out.read_text() or fmt == "text"  # the policy is named by its base name
    q = gpuadvisor("check", "--from", str(planted), "--redact", "--format", fmt)
    assert_clean(q.stdout, f"check {fmt} stdout")


def test_report_every_format(planted, tmp_path):
    h = tmp_path / "r.html"
    p = gpuadvisor("report", str(planted), "--redact", "--html", str(h), "--format", "text")
    assert p.returncode == 0, p.stderr
    assert_clean(h.read_text(), "report html", (str(planted.parent),))
    assert_clean(p.stdout, "report text")
    assert "GA999" in h.read_text()  # the saved finding is shown, its message redacted
    for fmt in ("json", "html"):
        q = gpuadvisor("report", str(planted), "--redact", "--format", fmt)
        assert q.returncode == 0 and q.stdout
        assert_clean(q.stdout, f"report --format {fmt}", (str(planted.parent),))


@pytest.mark.parametrize(
    "sample", ["smi-q_h100sxmx8_thamada.txt", "nccl-allreduce_gcp-a3mega-2x8xh100_lessizzmore.txt"]
)
def test_import_every_output(sample, tmp_path, fixtures_dir):
    """A real 8x H100 nvidia-smi -q, and a real 2-node nccl-tests log, in a directory under a home path."""
    d = tmp_path / "home" / "erin-secret" / "vendor-outputs"
    d.mkdir(parents=True)
    text = (fixtures_dir / "import" / "samples" / sample).read_text()
    (d / sample).write_text(text)
    found = set(re.findall(r"GPU-[0-9a-f-]{36}", text)) | set(re.findall(r"Serial Number\s+:\s+(\d+)", text))
    found |= set(re.findall(r"Pid\s+\d+ on (\S+) device", text))
    assert len(found) == (16 if sample.startswith("smi") else 2), found  # 8 UUIDs + 8 serials; 2 hosts
    identifiers = (str(tmp_path), *found)
    j = tmp_path / "i.json"
    p = gpuadvisor("import", str(d), "--redact", "--json", str(j), "--origins")
    assert p.returncode == 0, p.stderr
    if sample.startswith("nccl"):
        notes = [n for m in json.loads(j.read_text())["measurements"] for n in m["notes"]]
        assert any(n.startswith("multi-node run: 2 hosts (redacted-host-1, redacted-host-2)") for n in notes), notes
    for name, out in (("json", j.read_text()), ("text", p.stdout)):
        assert_clean(out, f"import {name}", identifiers)
    assert_clean(p.stderr, "import stderr", tuple(found))  # stderr names the output path the user gave, nothing else
    q = gpuadvisor("import", str(d / sample), "--redact", "--format", "json")
    assert_clean(q.stdout, "import --format json", identifiers)
    r = gpuadvisor("report", str(j), "--redact", "--html", "-")
    assert_clean(r.stdout, "report of the import", identifiers)


@pytest.mark.slow
def test_bench_output(planted, tmp_path):
    pytest.importorskip("torch")
    j = tmp_path / "b.json"
    p = gpuadvisor(
        "bench",
        "--from",
        str(planted),
        "--backend",
        "gloo",
        "--nproc",
        "2",
        "--only",
        "all_reduce",
        "-b",
        "1K",
        "-e",
        "4K",
        "-n",
        "2",
        "-w",
        "1",
        "--redact",
        "--json",
        str(j),
    )
    assert p.returncode in (0, 1), p.stderr
    for name, text in (("json", j.read_text()), ("stdout", p.stdout)):
        assert_clean(text, f"bench {name}", (str(planted.parent),))


@pytest.mark.slow
def test_sigtermed_scan_bench_writes_a_redacted_partial_scan(tmp_path):
    import os

    pytest.importorskip("torch")
    here = socket.gethostname()
    s = tmp_path / "s.json"
    env = {
        **os.environ,
        "NCCL_COMM_ID": "10.23.45.67:29500",
        "CUDA_VISIBLE_DEVICES": f"{UUIDS[0]},{UUIDS[1]}",
        "NVIDIA_VISIBLE_DEVICES": MIG,
        "NCCL_DEBUG_FILE": f"{HOME}/nccl.log",
        "MASTER_ADDR": "gpu-secret-c03",
    }
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gpuadvisor",
            "scan",
            "--bench",
            "--backend",
            "gloo",
            "--nproc",
            "2",
            "--redact",
            "--json",
            str(s),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.time() + 90
    seen = ""
    while time.time() < deadline:  # the first measured size is reported on stderr
        line = p.stderr.readline()
        seen += line
        if "busbw" in line or not line:
            break
    p.send_signal(signal.SIGTERM)
    rest = p.communicate(timeout=60)[1]
    assert p.returncode == 143, seen + rest
    d = json.loads(s.read_text())
    assert any(pr.startswith("benchmark interrupted (SIGTERM)") for pr in d["problems"])
    also = (here,) if len(here) >= 4 else ()
    assert_clean(s.read_text(), "partial scan", also)
    assert d["host"]["hostname"] is None and d["host"]["unavailable"]["hostname"] == "redacted"
    assert d["software"]["env"]["NCCL_COMM_ID"] == "redacted-ip-1:29500"
