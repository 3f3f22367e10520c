"""Held-out set 30's reading classes (an nvidia-smi table row cut inside its bus-id cell, another vendor's kernel
log, the libibverbs example programs' errors, club-3090's markdown rig report, the pip-list tail of a collect_env),
each on its s30 paste and another real public sample of the same form.

Values are the pastes' own (quoted in each test), never this tool's output."""

from __future__ import annotations

from tests.test_s21_reading import CORPUS, _read

# --- class 1: a table's first GPU row cut after its Disp.A cell (the bus id shown whole, the ECC cell not) ---


def test_a_row_cut_after_its_display_cell_keeps_bus_id_and_persistence():
    # https://github.com/ethereum-mining/ethminer/issues/207: driver 375.66, the paste ends in
    # '|   0  GeForce GTX 106...  Off  | 0000:01:00.0      On' (no ECC cell, no second row)
    rig = _read(CORPUS / "s30-smi" / "smi-375-gtx1060-display-on-no-cuda-field-cut-in-first-row_magniff.txt")
    assert [(g.index, g.bus_id, g.persistence_mode, g.name) for g in rig.gpus] == [(0, "0000:01:00.0", False, None)]
    assert rig.gpus[0].memory_total_bytes is None and "cut" in rig.gpus[0].why("memory_total_bytes")


# https://github.com/pop-os/pop/issues/3604 (driver 580.82.07), its table cut after the first row's Disp.A cell
_POP = """\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 580.82.07              Driver Version: 580.82.07      CUDA Version: 13.0     |
+-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA GeForce GTX 1650        Off |   00000000:01:00.0 Off
"""


def test_another_table_cut_after_its_display_cell():
    rig = _read("smi.txt", _POP)
    assert [(g.name, g.bus_id, g.persistence_mode, g.power_limit_w) for g in rig.gpus] == [
        ("NVIDIA GeForce GTX 1650", "0000:01:00.0", False, None)
    ]


def test_a_row_cut_inside_its_bus_id_keeps_no_bus_id():
    # the same row cut inside the bus id ('00000000:01:0'): a stub, never a bus id
    rig = _read("smi.txt", _POP[: _POP.rindex(":00.0 Off")] + "\n")
    assert rig.gpus[0].bus_id is None and rig.gpus[0].persistence_mode is False
