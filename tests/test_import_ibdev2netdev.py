"""ibdev2netdev: each port read with its interface's link layer and no state (the "(Up)"/"(Down)" word is the network
interface's), and beside an ibstat, wherever it stands in the paste, the ibstat's ports are the ports. The ibdev2netdev
lines are written by hand in the tool's layout (``mlx5_0 port 1 ==> ib0 (Up)``, as in imbue-ai/cluster-health#4);
the ibstat is the real paste of tests/corpus/rdma (its source in that folder's INDEX.toml)."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.importers import import_files
from gpuadvisor.rules import evaluate

IBSTAT = Path(__file__).resolve().parent / "corpus" / "rdma" / "ibstat_one-ca-rate-2.5_mrbr.txt"
LINES = "mlx5_0 port 1 ==> ibp26s0 (Down)\nmlx5_1 port 1 ==> enp27s0f0np0 (Up)\nmlx5_2 port 1 ==> eth9 (Up)\n"


def _imported(tmp_path, text: str):
    path = tmp_path / "paste.txt"
    path.write_text(text)
    return import_files([path])


def test_each_port_is_read_with_its_link_layer_and_no_state(tmp_path):
    ports = _imported(tmp_path, "$ ibdev2netdev\n" + LINES).network.rdma_ports
    assert [(p.device, p.port, p.state, p.link_layer) for p in ports] == [
        ("mlx5_0", 1, None, "InfiniBand"),
        ("mlx5_1", 1, None, "Ethernet"),
        ("mlx5_2", 1, None, None),
    ]
    said = "ibdev2netdev shows the network interface's state (ibp26s0 Down), not the RDMA port's"
    assert ports[0].why("state") == said


def test_a_down_interface_is_no_port_fault(tmp_path):
    rig = _imported(tmp_path, LINES)
    assert not [f for f in evaluate(rig) if f.code == "GA803" and f.severity in ("warn", "fail")]


def test_ibstat_holds_the_ports_before_or_after_ibdev2netdev(tmp_path):
    ibstat = IBSTAT.read_text()
    name = ibstat.split("CA '", 1)[1].split("'", 1)[0]
    mine = LINES.replace("mlx5_0", name)
    for text in (mine + "\n" + ibstat, ibstat + "\n" + mine):
        ports = _imported(tmp_path, text).network.rdma_ports
        assert [(p.device, p.rate_gbps) for p in ports] == [(name, 2.5)]  # mlx5_1 and mlx5_2 add no stateless port
