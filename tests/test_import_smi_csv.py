"""``nvidia-smi --query-gpu=... --format=csv``, written by hand in the form nvidia-smi(1) documents
(https://docs.nvidia.com/deploy/nvidia-smi/index.html, "--query-gpu", "--format=csv"; field names from
``nvidia-smi --help-query-gpu``), recognised by content beside other outputs."""

from __future__ import annotations

from gpuadvisor.importers import import_texts
from gpuadvisor.importers.sections import split_sections

CSV = """$ nvidia-smi --query-gpu=index,name,pci.bus_id,memory.total,driver_version,pcie.link.gen.current,pcie.link.width.current,power.limit --format=csv
index, name, pci.bus_id, memory.total [MiB], driver_version, pcie.link.gen.current, pcie.link.width.current, power.limit [W]
0, NVIDIA A100-SXM4-80GB, 00000000:07:00.0, 81920 MiB, 580.105.08, 4, 16, 400.00 W
1, NVIDIA A100-SXM4-80GB, 00000000:0B:00.0, 81920 MiB, 580.105.08, 4, 16, [N/A]
"""  # noqa: E501


def test_query_gpu_csv_is_read() -> None:
    assert [s.kind for s in split_sections(CSV)] == ["smi-csv"]
    rig = import_texts([("q.csv", CSV)])
    assert [(g.index, g.name, g.bus_id, g.memory_total_bytes) for g in rig.gpus] == [
        (0, "NVIDIA A100-SXM4-80GB", "0000:07:00.0", 81920 * 2**20),
        (1, "NVIDIA A100-SXM4-80GB", "0000:0b:00.0", 81920 * 2**20),
    ]
    assert rig.software.driver_version == "580.105.08"
    assert [(g.pcie.current_gen, g.pcie.current_width) for g in rig.gpus] == [(4, 16), (4, 16)]
    assert rig.gpus[0].power_limit_w == 400.0 and rig.gpus[1].power_limit_w is None
    assert "N/A" in rig.gpus[1].unavailable["power_limit_w"]


def test_a_cut_last_cell_is_not_shown() -> None:
    rig = import_texts([("q.csv", CSV.rstrip("\n")[:-3])])  # "[N/" of "[N/A]"... and a cut 400 would be the same
    assert len(rig.gpus) == 2 and rig.gpus[1].power_limit_w is None
    assert rig.gpus[1].unavailable["power_limit_w"].startswith("elided in the paste")
    cut = CSV.replace("[N/A]", "350.00 W").rstrip("\n")[:-5]  # "350." of "350.00 W"
    assert import_texts([("q.csv", cut)]).gpus[1].power_limit_w is None
