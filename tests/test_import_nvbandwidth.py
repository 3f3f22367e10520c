"""nvbandwidth output, from the examples in NVIDIA's own README (https://github.com/NVIDIA/nvbandwidth, README.md,
"Example output" and "Bidirectional Host <-> Device Bandwidth Tests"), recognised by content in one import."""

from __future__ import annotations

from gpuadvisor.importers import import_texts
from gpuadvisor.importers.sections import split_sections

README_H2D = """./nvbandwidth -t host_to_device_memcpy_ce
Running host_to_device_memcpy_ce.
memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)
          0         1
0      6.20     12.36
"""
README_BIDIR = """Running host_to_device_bidirectional_memcpy_ce.
memcpy CE CPU(row) <-> GPU(column) bandwidth (GB/s)
          0         1
0      5.64     11.16
"""


def test_host_to_device_per_gpu() -> None:
    assert [s.kind for s in split_sections(README_H2D)] == ["nvbandwidth"]
    rig = import_texts([("nvb.txt", README_H2D)])
    assert [(m.kind, m.gpus, m.value_gbps) for m in rig.measurements] == [("h2d", [0], 6.2), ("h2d", [1], 12.36)]
    assert all(m.method.startswith("nvbandwidth") and "host_to_device_memcpy_ce (CE copy)" in m.method
               for m in rig.measurements)  # fmt: skip
    assert [m.provenance for m in rig.measurements] == ["imported", "imported"]


def test_a_testcase_with_no_kind_here_is_listed_not_read() -> None:
    rig = import_texts([("nvb.txt", README_H2D + "\n" + README_BIDIR)])
    assert [m.kind for m in rig.measurements] == ["h2d", "h2d"]
    assert any("host_to_device_bidirectional_memcpy_ce" in p and "not read" in p for p in rig.problems)


def test_cut_inside_the_last_cell_keeps_the_cells_before_it() -> None:
    rig = import_texts([("nvb.txt", README_H2D.rstrip("\n")[:-2])])  # "12.3" of "12.36"
    assert [(m.gpus, m.value_gbps) for m in rig.measurements] == [([0], 6.2)]


def test_device_to_device_pairs_and_the_banner() -> None:
    """The banner and device lines as nvbandwidth 0.8 prints them (its source, output.cpp), a D2D read matrix
    with N/A on the diagonal (written by hand from the README's format)."""
    text = (
        "nvbandwidth Version: v0.8\nBuilt from Git version: v0.8\n\nCUDA Runtime Version: 12080\n"
        "CUDA Driver Version: 12080\nDriver Version: 570.124.06\n\n"
        "Device 0: NVIDIA H100 80GB HBM3 (00000000:19:00)\nDevice 1: NVIDIA H100 80GB HBM3 (00000000:3b:00)\n\n"
        "Running device_to_device_memcpy_read_ce.\nmemcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)\n"
        "           0         1\n 0       N/A    389.91\n 1    390.12       N/A\n\n"
        "SUM device_to_device_memcpy_read_ce 780.03\n"
    )
    rig = import_texts([("nvb.txt", text)])
    assert [(g.index, g.name, g.bus_id) for g in rig.gpus] == [
        (0, "NVIDIA H100 80GB HBM3", "0000:19:00.0"),
        (1, "NVIDIA H100 80GB HBM3", "0000:3b:00.0"),
    ]
    assert rig.software.driver_version == "570.124.06"
    assert [(m.kind, m.gpus, m.value_gbps) for m in rig.measurements] == [
        ("p2p_unidir", [0, 1], 389.91),
        ("p2p_unidir", [1, 0], 390.12),
    ]


def test_quoted_running_lines_and_a_left_out_running_line() -> None:
    """Stated edits of the README example: its 'Running' line kept behind a '> ' quote marker, or left out."""
    quoted = README_H2D.replace("Running host", "> Running host")
    assert [m.value_gbps for m in import_texts([("q.txt", quoted)]).measurements] == [6.2, 12.36]
    untitled = README_H2D.replace("Running host_to_device_memcpy_ce.\n", "...\n")
    rig = import_texts([("u.txt", "nvbandwidth Version: v0.8\n" + untitled)])
    assert [(m.kind, m.value_gbps) for m in rig.measurements] == [("h2d", 6.2), ("h2d", 12.36)]


def test_a_device_line_that_ends_the_paste_keeps_no_stub_name() -> None:
    # nvbandwidth's banner always goes on after its Device lines: one ending the paste was cut there
    head = "nvbandwidth Version: v0.2\nDriver Version: 525.125.06\n\nDevice 0: NVIDIA GeForce RTX 2080 Ti\n"
    rig = import_texts([("nvb.txt", head + "Device 1: NVIDIA GeForce RTX 2")])
    assert [(g.index, g.name) for g in rig.gpus] == [(0, "NVIDIA GeForce RTX 2080 Ti"), (1, None)]
    rig = import_texts([("nvb.txt", head + "Device 1: NVIDIA GeForce RTX 2080 Ti\n")])
    assert [g.name for g in rig.gpus] == ["NVIDIA GeForce RTX 2080 Ti"] * 2
