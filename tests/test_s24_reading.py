"""Held-out set 24's reading classes (GPU outputs), each on its s24 paste and another real public sample of the same
form.

Values are the pastes' own (quoted in each test), never this tool's output."""

from __future__ import annotations

from gpuadvisor.importers import import_texts
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
