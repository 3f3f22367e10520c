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
