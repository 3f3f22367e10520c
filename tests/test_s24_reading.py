"""Held-out set 24's reading classes (GPU outputs), each on its s24 paste and another real public sample of the same
form.

Values are the pastes' own (quoted in each test), never this tool's output."""

from __future__ import annotations

import pytest

from gpuadvisor.importers import import_texts
from gpuadvisor.importers.errors import ImportParseError
from tests.test_s21_reading import CORPUS, _read

# --- class 1: a --query-gpu CSV whose last row is cut: a started row is a GPU, its cut cell not shown ---


def test_a_csv_row_cut_in_its_bus_id_is_a_gpu_with_its_bus_id_not_shown():
    # https://github.com/NVIDIA/nvidia-docker/issues/1418: 'uuid, pci.bus_id, pci.domain', five whole rows, a sixth
    # 'GPU-a27fb382-bad2-c02a-95ba-f6a1da38e76c, 00000000:' cut inside its bus id
    rig = _read(CORPUS / "s24-smi-csv" / "query-gpu-uuid-bus-id-domain-csv-6-gpus-cut-in-sixth-bus-id_klueska.txt")
    assert [g.bus_id for g in rig.gpus][4:] == ["0000:85:00.0", None]
    assert rig.gpus[5].uuid == "GPU-a27fb382-bad2-c02a-95ba-f6a1da38e76c"
    assert "bus_id" in rig.gpus[5].unavailable


def test_a_headerless_name_bus_id_csv_cut_in_its_last_bus_id():
    # https://github.com/xmrig/xmrig-nvidia/issues/69: 'nvidia-smi --query-gpu=gpu_name,gpu_bus_id --format=csv'
    # pasted without its header, five GPUs (GTX 750 and 750 Ti at 01..04:00.0, a GTX 750 at 08:00.0); the paste
    # here cut inside the fifth bus id, as a paste that ends early is
    rows = [
        "GeForce GTX 750, 00000000:01:00.0",
        "GeForce GTX 750 Ti, 00000000:02:00.0",
        "GeForce GTX 750 Ti, 00000000:03:00.0",
        "GeForce GTX 750 Ti, 00000000:04:00.0",
        "GeForce GTX 750, 00000000:",
    ]
    rig = import_texts([("order.txt", "\n".join(rows) + "\n")])
    assert [g.name for g in rig.gpus] == ["GeForce GTX 750", *["GeForce GTX 750 Ti"] * 3, "GeForce GTX 750"]
    assert [g.bus_id for g in rig.gpus] == ["0000:01:00.0", "0000:02:00.0", "0000:03:00.0", "0000:04:00.0", None]
    # a row that is not cut but another output's (one cell) still ends the table
    rig = import_texts([("order.txt", "\n".join(rows[:4]) + "\n$ nvidia-smi -L\n")])
    assert len(rig.gpus) == 4


# --- class 2: topo -m rows without their header line, from a row below GPU0 ---

# the paste's cells, its runs of spaces written as tabs here
_NVSHMEM_52 = (
    "GPU4\tNV18\tNV18\tNV18\tNV18\tX\tNV18\tNV18\tNV18\tSYS\tSYS\tPIX\tNODE\t48-95,144-191\t1\tN/A\n"
    "GPU5\tNV18\tNV18\tNV18\tNV18\tNV18\tX\tNV18\tNV18\tSYS\tSYS\tNODE\tNODE\t48-95,144-191\t1\tN/A\n"
    "GPU6\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tX\tNV18\tSYS\tSYS\tNODE\tPIX\t48-95,144-191\t1\tN/A\n"
    "GPU7\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tX\tSYS\tSYS\tNODE\tNODE\t48-95,144-191\t1\tN/A\n"
)


def test_topo_rows_from_gpu4_take_the_gpu_count_from_a_nic_row():
    # https://github.com/vllm-project/vllm/issues/6746: tab-separated rows GPU4-7 (NV18 to seven GPUs, 12 NIC
    # columns, '56-111,168-223  1  N/A'), then NIC0-NIC8, NIC0's X in the ninth link column: 8 GPUs, 12 NICs
    rig = _read(CORPUS / "s24-topo" / "topo-m-fragment-from-gpu4-tabs-8x-h100-nv18-12-nics-no-header_jueming0312.txt")
    assert len(rig.gpus) == 8 and len(rig.topology.nics) == 12
    assert [g.numa_node for g in rig.gpus] == [None] * 4 + [1] * 4
    assert rig.gpus[4].cpu_affinity == "56-111,168-223"
    # GPU4's row: 'SYS' x6 then 'PXB' under NIC6
    assert rig.topology.nic_matrix[4][5:7] == ["SYS", "PXB"]
    assert rig.topology.matrix is not None and rig.topology.matrix[4][5] == "NV18"
    assert any("no header line" in p and "GPU0-GPU7" in p for p in rig.problems)
    # https://github.com/bytedance/flux/issues/14: rows GPU5-7, then NIC0-NIC4 (NIC4 cut after its X)
    rig = _read(CORPUS / "s24-topo" / "topo-m-fragment-gpu5-7-and-nics-8x-h100-12-nics-no-header_wenscarl.txt")
    assert len(rig.gpus) == 8 and [g.numa_node for g in rig.gpus][5:] == [1, 1, 1]
    assert rig.topology.nic_matrix[7][11] == "PXB"  # GPU7 'PXB' under NIC11


def test_topo_rows_without_a_nic_row_are_not_guessed():
    # https://github.com/NVIDIA/nvshmem/pull/52: rows GPU4-7 of an 8-GPU, 4-NIC topo -m (12 link columns). Without
    # its header or a NIC row, the four columns after GPU7 could be GPUs or NICs: not read as either
    with pytest.raises(ImportParseError):
        _read("topo.txt", _NVSHMEM_52)


# --- class 3: an nvidia-smi table printed with an empty line after each of its lines ---

_DSS8440_ROWS = [  # (bus id, power draw W, memory used MiB) of GPUs 0-7
    ("11", 59, 10663), ("12", 1, 0), ("47", 15, 0), ("48", 18, 0), ("89", 7, 0), ("8A", 17, 0), ("C0", 13, 0),
    ("C1", 54, 167),
]  # fmt: skip


def _dss8440() -> str:
    rule = "+-------------------------------+----------------------+----------------------+"
    lines = [
        "Thu Mar 26 17:17:21 2020",
        "+-----------------------------------------------------------------------------+",
        "| NVIDIA-SMI 440.64.00    Driver Version: 440.64.00    CUDA Version: 10.2     |",
        "|-------------------------------+----------------------+----------------------+",
        "| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |",
        "| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |",
        "|===============================+======================+======================|",
    ]
    for i, (bus, watts, used) in enumerate(_DSS8440_ROWS):
        lines += [
            f"|   {i}  GeForce RTX 208...  On   | 00000000:{bus}:00.0 Off |                  N/A |",
            f"| 31%   33C    P2   {watts:>3}W / 250W | {used:>6}MiB / 11019MiB |      0%      Default |",
            rule,
        ]
    lines += [
        "",
        "+-----------------------------------------------------------------------------+",
        "| Processes:                                                       GPU Memory |",
        "|  GPU       PID   Type   Process name                             Usage      |",
        "|=============================================================================|",
        "|    0     29033      C   python                                     10651MiB |",
        "+-----------------------------------------------------------------------------+",
    ]
    return "\n\n".join(lines) + "\n"


def test_a_table_with_an_empty_line_after_each_line_is_read():
    # https://github.com/singularityhub/singularity-cli/pull/59: driver 367.128, one GRID K2 at '0000:0C:00.0',
    # persistence Off, every line of the table followed by an empty one
    rig = _read(CORPUS / "s24-smi" / "smi-367-grid-k2-blank-lines-between-rows-four-digit-domain-cut_al3x609.txt")
    [g] = rig.gpus
    assert (g.name, g.bus_id, g.persistence_mode, rig.software.driver_version) == (
        "GRID K2",
        "0000:0c:00.0",
        False,
        "367.128",
    )
    # A public note of a Dell DSS 8440's 'watch nvidia-smi' (found through the code index, document
    # 'Dell-DSS8440-GPU-Test', its repository not shown by the index), printed the same way: driver 440.64.00, eight
    # 'GeForce RTX 208...' (a name cut by nvidia-smi), 250 W caps, 11019 MiB each, bus ids 11, 12, 47, 48, 89, 8A,
    # C0, C1; the cells as the note shows them (its temperatures and utilisations not asserted)
    rig = _read("smi.txt", _dss8440())
    assert [g.bus_id for g in rig.gpus] == [f"00000000:{b}:00.0".lower()[4:] for b, _, _ in _DSS8440_ROWS]
    assert [g.power_draw_w for g in rig.gpus] == [w for _, w, _ in _DSS8440_ROWS]
    assert {g.power_limit_w for g in rig.gpus} == {250} and {g.memory_total_bytes for g in rig.gpus} == {11019 << 20}
    assert rig.software.driver_version == "440.64.00" and rig.software.cuda_driver_version == "10.2"
    assert not any("not shown to its end" in p for p in rig.problems)  # its Processes table was reached


# --- class 5: a collect_env report that prints its topology matrix above the driver line ---


def test_collect_env_with_its_topology_above_the_driver_line():
    # https://github.com/vectorch-ai/ScaleLLM/pull/288: ScaleLLM's collect_env (scalellm/utils/collect_env.py prints
    # 'GPU topology:' with 'nvidia-smi topo -mp' before 'Nvidia driver version:'): one A100 80GB PCIe, its topo row
    # '0-31,64-95  0', then the legend, then 'Nvidia driver version: 550.90.07'
    rig = _read(
        CORPUS / "s24-collect-env" / "scalellm-collect-env-a100-80gb-pcie-topology-legend-nccl-2-20-cut_guocuimi.txt"
    )
    [g] = rig.gpus
    assert (g.name, g.numa_node, g.cpu_affinity) == ("NVIDIA A100 80GB PCIe", 0, "0-31,64-95")
    assert (rig.software.driver_version, rig.software.torch_version) == ("550.90.07", "2.4.0+cu124")


def test_a_line_that_is_no_row_after_the_csv_is_not_a_gpu():
    # a header and the first row of https://github.com/NVIDIA/nvidia-docker/issues/1418's form (index added), then a
    # line of prose with fewer cells before the fence: its whole first cell is no index, so the line is no cut row
    text = "```\nindex, pci.bus_id, pci.domain\n0, 00000000:06:00.0, 0x0000\nThen the container, see below\n```\n"
    assert len(_read("q.txt", text).gpus) == 1
