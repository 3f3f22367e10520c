"""The classes of input held-out set 30b found misread, each on its corpus paste and on another real public sample
of the same form (cited where it is copied, or below)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuadvisor import rules
from gpuadvisor.errors import InputError
from gpuadvisor.facts import Finding, Rig
from gpuadvisor.facts.beyond import SERVICE_LOG
from gpuadvisor.importers import import_files, import_texts

ROOT = Path(__file__).resolve().parent
CORPUS = ROOT / "corpus"
FOUND = ROOT / "fixtures" / "import" / "found"


def _one(folder: str, stem: str) -> Path:
    (path,) = sorted((CORPUS / folder).glob(f"{stem}*.txt"))
    return path


def _raised(rig: Rig, code: str) -> list[Finding]:
    return [f for f in rules.evaluate(rig) if f.code == code and f.severity in ("warn", "fail")]


# --- 1. p2pBandwidthLatencyTest's latency matrix: a peer path that stalls (tens of ms, not a few us) ---------------

P2P_STALLED = _one("s30b-cuda-samples", "indented-p2p-enabled-latency-matrix")
P2P_HEALTHY = FOUND / "p2pbandwidthlatencytest_8xa100-sxm4-40gb-nvlink_abci.txt"  # aistabci/abci2.0benchmark


def test_a_latency_of_49_ms_between_every_pair_fails_the_peer_path() -> None:
    rig = import_files([P2P_STALLED])
    latencies = sorted(m.latency_us for m in rig.measurements if m.kind == "p2p_latency")
    assert len(latencies) == 56 and latencies[0] == 49206.39 and latencies[-1] == 49206.88  # 8x7 pairs, as printed
    (f,) = _raised(rig, "GA603")
    assert f.severity == "fail" and f.gpus == list(range(8))
    assert f.observed["pairs"] == 56 and 49206 < f.observed["median_latency_us"] < 49207
    assert "49.2 ms" in f.message and "IOMMU" in (f.fix or "") and "ACS" in (f.fix or "")


def test_a_healthy_nvlink_node_s_latencies_raise_nothing() -> None:
    """8x A100 SXM4: P2P writes 2.78-3.41 us, P2P disabled (through host memory) 21.08-23.94 us."""
    rig = import_files([P2P_HEALTHY])
    latencies = [m.latency_us for m in rig.measurements if m.kind == "p2p_latency"]
    assert len(latencies) == 112 and max(latencies) == 23.94 and min(latencies) == 2.78  # two tables of 56 pairs
    assert not [f for f in _raised(rig, "GA603") if "latency" in f.message]


def _untitled(path: Path, title: str) -> str:
    """The paste from its latency table's 'GPU 0 1 ...' header on, the matrix's title line cut."""
    lines = path.read_text().splitlines(keepends=True)
    at = next(i for i, x in enumerate(lines) if x.strip().startswith(title))
    return "".join(lines[at + 1 :])


def test_the_latency_table_without_its_title_is_read_as_latencies_saying_what_was_assumed() -> None:
    rig = import_texts([("paste.txt", _untitled(P2P_STALLED, "P2P=Enabled Latency"))])
    assert [g.index for g in rig.gpus] == list(range(8)) and all(g.name is None for g in rig.gpus)
    ms = [m for m in rig.measurements if m.kind == "p2p_latency"]
    assert len(ms) == 56 and {m.p2p_enabled for m in ms} == {None}
    assert all("not known" in m.unavailable["p2p_enabled"] for m in ms)
    assert any("without its title" in p and "us" in p for p in rig.problems)
    (f,) = _raised(rig, "GA603")
    assert f.observed["pairs"] == 56


def test_a_healthy_latency_table_without_its_title_reads_its_gpu_table_only() -> None:
    """The ABCI node's P2P-enabled table, cut above its header: the GPU table's 56 pairs, not the CPU table's."""
    rig = import_texts([("paste.txt", _untitled(P2P_HEALTHY, "P2P=Enabled Latency"))])
    ms = sorted(m.latency_us for m in rig.measurements if m.kind == "p2p_latency")
    assert len(ms) == 56 and ms[0] == 2.78 and ms[-1] == 3.41
    assert not [f for f in _raised(rig, "GA603") if "latency" in f.message]


# --- 2. nvidia-container-cli's 'driver error: timed out': NVML does not answer the toolkit within 10 s ----------------

NVC_KUBELET = _one("s30b-logs", "journal-kubelet-nvidia-container-cli-driver-error-timed-out")
NVC_DOCKER = ROOT / "fixtures/import/container/oci-hook-driver-timed-out-persistence-off_nvidia-docker723.txt"


def test_the_toolkit_s_driver_timeout_in_a_kubelet_journal_fails_the_node() -> None:
    rig = import_files([NVC_KUBELET])
    checks = [(c.tool, c.check, c.verdict) for c in rig.node.health_checks or []]
    assert checks == [("container runtime", "timed-out", "fail")] * 2  # the hook's line, then the pod's klog E-line
    (f,) = _raised(rig, "GA507")
    assert f.severity == "fail" and "detection error: driver error: timed out" in f.message
    assert "Xid" in (f.fix or "") and "drain" in (f.fix or "") and "persistence mode" in (f.fix or "")
    assert not _raised(rig, "GA828")  # judged, not left as a line nobody read


def test_the_same_timeout_at_initialisation_from_docker_run_fails_too() -> None:
    """nvidia-docker#723: Docker's OCI error, the hook's 'initialization error: driver error: timed out'."""
    rig = import_files([NVC_DOCKER])
    assert [(c.check, c.evidence.rsplit(":", 1)[1]) for c in rig.node.health_checks or []] == [("timed-out", "4")]
    (f,) = _raised(rig, "GA507")
    assert "initialization error: driver error: timed out" in f.message and f.severity == "fail"


def test_the_newer_rpc_wording_is_the_same_timeout() -> None:
    """NVIDIA/nvidia-container-toolkit#237's title: 'nvidia-container-cli: initialization error: driver rpc error:
    timed out' (the toolkit's newer message)."""
    rig = import_texts([("t.txt", "nvidia-container-cli: initialization error: driver rpc error: timed out\n")])
    assert [c.check for c in rig.node.health_checks or []] == ["timed-out"]


# --- 4. rocm-smi -a pasted from mid-output: its 'GPU[N]\t\t: ' rows and section banners are AMD's, refused ----------

ROCM_MID = _one("s30b-not-read", "rocm-smi-a-radeon-2f00")
# rocm-smi -a on 4x MI300X, from its Serial Number section to its PCI bus ids (banners and rows as printed, some
# sections between them left out, cut above the tool's own header):
# github.com/thamada/nvidia-smi/blob/b09ef139265ffc7e3c78006346981de8e4d70499/gls/MI300X_x4_smi.py
MI300X_ROWS = (
    "===================================== Serial Number ======================================\n"
    "GPU[0]\t\t: Serial Number: 692347006052\n"
    "GPU[1]\t\t: Serial Number: 692347005894\n"
    "GPU[2]\t\t: Serial Number: 692347006047\n"
    "GPU[3]\t\t: Serial Number: 692347005902\n"
    "==========================================================================================\n"
    "===================================== KFD Processes ======================================\n"
    "get_compute_process_info_by_pid, Not supported on the given system\n"
    "KFD process information:\n"
    "PID    \tPROCESS NAME\tGPU(s)\tVRAM USED\tSDMA USED\tCU OCCUPANCY\t\n"
    "1188185\tUNKNOWN     \t0     \tUNKNOWN  \tUNKNOWN  \tUNKNOWN     \t\n"
    "==========================================================================================\n"
    "======================================= PCI Bus ID =======================================\n"
    "GPU[0]\t\t: PCI Bus: 0000:26:00.0\n"
    "GPU[1]\t\t: PCI Bus: 0000:46:00.0\n"
    "GPU[2]\t\t: PCI Bus: 0000:65:00.0\n"
    "GPU[3]\t\t: PCI Bus: 0000:85:00.0\n"
)


@pytest.mark.parametrize("text", [ROCM_MID.read_text(), MI300X_ROWS], ids=["radeon-2f00", "mi300x-x4"])
def test_rocm_smi_rows_without_its_header_are_refused_as_amd_s(text: str) -> None:
    with pytest.raises(InputError) as e:
        import_texts([("rocm.txt", text)])
    assert "rocm-smi output (an AMD GPU tool)" in str(e.value) and "\n" not in str(e.value)


# --- 5. glog's lines with the year in their date (glog 0.7: 'I20260203 17:42:09.400249 ...'), naming RDMA devices --

MOONCAKE = _one("s30b-rdma-logs", "mooncake-glog-rdma-context")
# a Mooncake transfer engine's start under NIXL's test, glog with the year (ai-dynamo/nixl#330, its first lines)
NIXL_330 = (
    "root:/usr/local/nixl/bin# ./mooncake_backend_test \n"
    "WARNING: Logging before InitGoogleLogging() is written to STDERR\n"
    "I20250519 11:37:43.163678  1480 transfer_engine.cpp:350] Metrics reporting is disabled (set MC_TE_METRIC=1 to "
    "enable)\n"
    "I20250519 11:37:43.163743  1480 transfer_engine.cpp:44] Transfer Engine starting. Server: 127.0.0.1, Metadata: "
    "P2PHANDSHAKE, ip_or_host_name: , rpc_port: 0\n"
    "I20250519 11:37:43.163780  1480 transfer_engine.cpp:100] Transfer Engine RPC using P2P handshake, listening on "
    "127.0.0.1:15317\n"
    "I20250519 11:37:43.163882  1480 transfer_engine.cpp:112] Auto-discovering topology...\n"
    "I20250519 11:37:43.165282  1480 transfer_engine.cpp:127] Topology discovery complete. Found 8 HCAs.\n"
    "I20250519 11:37:43.171371  1480 rdma_context.cpp:125] RDMA device: mlx5_bond_7, LID: 0, GID: (GID_Index 3) "
    "00:00:00:00:00:00:00:00:00:00:ff:ff:1d:70:89:3d\n"
    "I20250519 11:37:43.176421  1480 rdma_context.cpp:125] RDMA device: mlx5_bond_6, LID: 0, GID: (GID_Index 3) "
    "00:00:00:00:00:00:00:00:00:00:ff:ff:1d:70:87:9c\n"
)


@pytest.mark.parametrize(("name", "text", "lines"), [("mooncake", MOONCAKE.read_text(), 12), ("nixl-330", NIXL_330, 8)])
def test_a_glog_with_the_year_naming_rdma_devices_is_read_as_a_log_and_a_healthy_start_raises_nothing(
    name: str, text: str, lines: int
) -> None:
    rig = import_texts([(f"{name}.txt", text)])
    assert rig.kernel.events == [] and not rig.gpus
    assert rig.kernel.source == SERVICE_LOG and rig.kernel.lines_read == lines
    assert not [f for f in rules.evaluate(rig) if f.severity in ("warn", "fail")]


# --- 3. nvidia-smi's 'No devices were found' quoted in a report, on a host whose GPU service looked for its GPUs ----

NO_DEVICES_PROSE = _one("s30b-lost-gpu", "prose-no-devices-were-found")


def _checks(rig: Rig) -> list[tuple[str, str, str]]:
    return [(c.tool, c.check, c.verdict) for c in rig.node.health_checks or []]


def test_no_devices_quoted_in_prose_with_the_docker_plugin_stuck_discovering_fails() -> None:
    rig = import_files([NO_DEVICES_PROSE])
    assert not rig.gpus
    assert _checks(rig) == [
        ("nvidia-docker-plugin", "GPU discovery", "warn"),
        ("nvidia-smi", "No devices were found", "fail"),
    ]
    found = {(f.subject, f.severity) for f in _raised(rig, "GA827")}
    assert found == {("nvidia-smi No devices were found", "fail"), ("nvidia-docker-plugin GPU discovery", "warn")}
    (smi,) = [f for f in _raised(rig, "GA827") if f.severity == "fail"]
    assert smi.observed["evidence"].endswith(":2") and "lspci" in (smi.fix or "") and "drain" in (smi.fix or "")


def test_no_devices_in_a_container_after_a_reboot_is_a_note_not_a_lost_gpu() -> None:
    """NVIDIA/nvidia-container-toolkit#32: nvidia-smi in a container started after the host's reboot says 'No devices
    were found' (the host's nvidia-smi then makes it work): nothing shows a GPU host's service missing its GPUs."""
    text = (
        "# ctr run -t --rm --gpus 0 nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda10.2 sample nvidia-smi\n"
        "No devices were found\n"
    )
    rig = import_texts([("ctr.txt", text)])
    assert any("line 2: nvidia-smi: No devices were found" in p for p in rig.problems)
    assert not rig.node.health_checks and not [f for f in rules.evaluate(rig) if f.severity == "fail"]


def test_the_phrase_inside_a_sentence_is_not_the_message() -> None:
    """The report's own words, the message inside a sentence: not nvidia-smi's line, no check of nvidia-smi's."""
    text = NO_DEVICES_PROSE.read_text().replace(
        '`"No devices were found"`', 'it says "No devices were found" every time'
    )
    rig = import_texts([("prose.txt", text)])
    assert ("nvidia-smi", "No devices were found", "fail") not in _checks(rig)
    assert not any("nvidia-smi: No devices were found" in p for p in rig.problems)
