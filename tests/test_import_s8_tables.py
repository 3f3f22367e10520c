"""Held-out set 8's classes of tables, with text written by hand in the layout nvidia-smi prints (its --help-query-gpu
and topo -m outputs): a --query-gpu CSV printed with noheader, and a topo -m row cut inside its affinity columns."""

from __future__ import annotations

from gpuadvisor.importers import import_texts


def _read(text: str):
    return import_texts([("paste.txt", text)])


def test_a_noheader_query_gpu_csv_reads_what_its_cells_show_by_their_form():
    # nvidia-smi --query-gpu=name,pci.bus_id,temperature.gpu,utilization.gpu --format=csv,noheader
    text = "NVIDIA A100-SXM4-80GB, 00000000:07:00.0, 34, 0 %\nNVIDIA A100-SXM4-80GB, 00000000:0F:00.0, 36, 12 %\n"
    rig = _read(text)
    assert [(g.name, g.bus_id, g.temperature_c) for g in rig.gpus] == [
        ("NVIDIA A100-SXM4-80GB", "0000:07:00.0", None),  # 34 is a temperature or a clock: its column is not named
        ("NVIDIA A100-SXM4-80GB", "0000:0f:00.0", None),
    ]


def test_key_value_rows_of_the_cuda_samples_are_not_a_noheader_csv():
    # p2pBandwidthLatencyTest's device lines: "Device: 0, <name>, pciBusID: 7, pciDeviceID: 0, pciDomainID:0"
    text = "Device: 0, NVIDIA A100-SXM4-80GB, pciBusID: 7, pciDeviceID: 0, pciDomainID:0\n"
    rig = _read(text)
    assert [g.bus_id for g in rig.gpus] == ["0000:07:00.0"]


TOPO = (
    "\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
    "GPU0\t X \tNV12\tPIX\t0-23,48-71\t0\t\tN/A\n"
    "GPU1\tNV12\t X \tSYS\t24-47,72-95\t1\n"  # the paste ends after its NUMA column (a newline added)
)


def test_a_topo_row_cut_inside_its_affinity_columns_keeps_the_cells_before_the_cut():
    rig = _read(TOPO)
    assert [(g.cpu_affinity, g.numa_node) for g in rig.gpus] == [("0-23,48-71", 0), ("24-47,72-95", None)]
    assert "cut" in rig.gpus[1].why("numa_node")  # its last cell may be a stub ("1" of "12")


# nvidia-smi's table, as its GPU rows print (index, name, persistence | bus id, display | ECC)
_ROWS = """\
+-----------------------------------------+----------------------+----------------------+
|   0  NVIDIA A100-SXM4-80GB          On  | 00000000:07:00.0 Off |                    0 |
| N/A   33C    P0             61W / 400W  |      4MiB / 81920MiB |      0%      Default |
|                                         |                      |             Disabled |
+-----------------------------------------+----------------------+----------------------+
|   1  NVIDIA A100-SXM4-80GB          On  | 00000000:0F:00.0 Off |                    0 |
"""


def test_a_table_row_without_banner_or_header_is_read():
    rig = _read(_ROWS)
    assert [(g.index, g.bus_id, g.memory_total_bytes, g.power_limit_w) for g in rig.gpus] == [
        (0, "0000:07:00.0", 81920 * 2**20, 400.0),
        (1, "0000:0f:00.0", None, None),
    ]


def test_a_first_row_cut_after_its_bus_id_cell_keeps_the_bus_id():
    text = _ROWS[: _ROWS.rindex("Off |") + len("Off |")]  # "|   1  ... On  | 00000000:0F:00.0 Off |" then the cut
    rig = _read(text)
    assert [(g.index, g.bus_id) for g in rig.gpus] == [(0, "0000:07:00.0"), (1, "0000:0f:00.0")]
    assert "cut" in rig.gpus[1].why("memory_total_bytes")


def test_an_eight_digit_pci_domain_is_kept_as_the_bus_id():
    # Azure VMs' GPUs sit behind Hyper-V's virtual PCI bus, whose domain is 32 bits: "GPU 3E3F8E05:00:00.0" in -q
    rig = _read(_ROWS.replace("00000000:07:00.0", "3E3F8E05:00:00.0"))
    assert rig.gpus[0].bus_id == "3e3f8e05:00:00.0"
