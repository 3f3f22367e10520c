"""rdma link, lsmod and NCCL debug logs pasted alone or together: real outputs (tests/fixtures/beyond/SOURCES.md)
with the reading and the conclusion an engineer draws, written by hand."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.importers import import_files
from gpuadvisor.rules import evaluate

BEYOND = Path(__file__).resolve().parent / "fixtures" / "beyond"


def _judged(name: str):
    rig = import_files([BEYOND / name])
    return rig, sorted((f.code, f.severity, f.subject) for f in evaluate(rig) if f.severity != "not-checked")


def test_nccl_gdr_disabled_with_peermem_loaded_is_read_from_one_paste():
    rig, got = _judged("nccl-gdr-disabled-peermem-loaded.txt")
    net = rig.network
    assert (net.nccl_nics, net.nccl_gdr_disabled, net.peermem_loaded) == (
        ["mlx5_0:1/RoCE", "mlx5_1:1/RoCE"],
        ["mlx5_0", "mlx5_1"],
        True,
    )
    assert got == [("GA825", "warn", "host")]


def test_nccl_gdr_disabled_for_lack_of_the_module_says_so():
    rig, got = _judged("nccl-gdr-disabled-no-module.txt")
    assert rig.network.nccl_transports == ["NET/IB/0"]
    # NCCL's "(no module)": no /sys/kernel/mm/memory_peers/nv_mem (net_ib's GDR check): the peer-memory rule's case
    assert got == [("GA808", "warn", "host")]
    (f,) = [f for f in evaluate(rig) if f.code == "GA808"]
    assert f.message.startswith("NCCL found no peer-memory module for mlx5_1, mlx5_2, mlx5_3: ")


def test_rdma_link_reads_state_and_physical_state():
    rig, got = _judged("rdma-link-polling.txt")
    (p,) = rig.network.rdma_ports or []
    assert (p.device, p.port, p.state, p.phys_state, p.rate_gbps) == ("mlx5_7", 1, "DOWN", "Polling", None)
    assert got == [("GA803", "warn", "mlx5_7 port 1")]


def test_healthy_rdma_link_after_its_prompt_raises_nothing():
    rig, got = _judged("rdma-link-show-active.txt")
    assert [(p.device, p.state, p.phys_state) for p in rig.network.rdma_ports or []] == [
        ("mlx5_0", "ACTIVE", "LinkUp"),
        ("mlx5_1", "ACTIVE", "LinkUp"),
    ]
    assert got == []


def test_a_session_mixing_nccl_tests_a_grepped_nccl_log_and_lsmod_reads_each(tmp_path: Path):
    samples = Path(__file__).resolve().parent / "fixtures" / "import" / "samples"
    session = (samples / "session_2x2080ti-smi-topo-p2p-cudasamples-nccl.txt").read_text()
    nccl = (BEYOND / "nccl-gdr-disabled-no-module.txt").read_text()
    paste = tmp_path / "mixed.txt"
    paste.write_text(session + "\n$ grep NCCL train.log\n" + nccl + "$ lsmod | grep nvidia\nnvidia_uvm  1523712  0\n")
    rig = import_files([paste])
    alone = import_files([samples / "session_2x2080ti-smi-topo-p2p-cudasamples-nccl.txt"])
    assert len(rig.gpus) == 2 and len(rig.measurements) == len(alone.measurements)  # nothing of the session lost
    assert rig.network.nccl_gdr_disabled == ["mlx5_1 (no module)", "mlx5_2 (no module)", "mlx5_3 (no module)"]
    assert rig.network.modules == ["nvidia_uvm"] and rig.network.peermem_loaded is None  # grepped: not said


PERFQUERY = """# Port counters: Lid 5 port 1 (CapMask: 0x5300)
PortSelect:......................1
SymbolErrorCounter:..............1542
LinkErrorRecoveryCounter:........3
LinkDownedCounter:...............1
PortRcvErrors:...................287
PortRcvRemotePhysicalErrors:.....0
PortXmitDiscards:................0
"""  # perfquery's layout as infiniband-diags prints it (perfquery(8)); the counts written by hand


def test_perfquery_counters_are_read_and_judged(tmp_path: Path):
    paste = tmp_path / "perfquery.txt"
    paste.write_text(PERFQUERY)
    rig = import_files([paste])
    (p,) = rig.network.rdma_ports or []
    assert (p.device, p.port, p.counters) == (
        "LID 5",
        1,
        {"symbol_error": 1542, "link_error_recovery": 3, "link_downed": 1, "port_rcv_errors": 287,
         "port_rcv_remote_physical_errors": 0, "port_xmit_discards": 0},
    )  # fmt: skip
    (f,) = [f for f in evaluate(rig) if f.code == "GA823"]
    assert (f.severity, f.observed) == ("warn", {"symbol_error": 1542, "port_rcv_errors": 287})
