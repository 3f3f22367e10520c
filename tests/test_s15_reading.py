"""Held-out set 15's misreads, as classes (files in tests/corpus/s15-*, gathered and read by hand before the tool ran
on them; each case names its source thread)."""

from __future__ import annotations

import pytest

from gpuadvisor.errors import InputError
from gpuadvisor.importers.merge import import_files
from gpuadvisor.importers.prefixed import strip_prefix
from tests.corpus_cases import corpus_file as _one
from tests.corpus_cases import warn_findings as _found


def test_an_editors_line_numbers_are_stripped_and_a_matrix_is_not_a_gutter() -> None:
    # https://github.com/NVIDIA/cuda-samples/issues/230: vim's ":set number" column before every line
    out, what = strip_prefix(
        "```\n  1 P2P=Disabled Latency Matrix (us)\n  2    GPU     0      1\n  3      0   2.61\n  4\n```\n"
    )
    assert (out, what) == (
        "```\nP2P=Disabled Latency Matrix (us)\n   GPU     0      1\n     0   2.61\n\n```\n",
        "an editor's line numbers",
    )
    rows = "     0   2.61  14.95\n     1  11.09   2.10\n     2  13.34  16.44\n"
    assert strip_prefix(rows) == (rows, None)  # a matrix's row numbers are its own
    rig = import_files([_one("s15-cuda-samples/p2p-latency-only-vim-*.txt")])
    assert len(rig.gpus) == 4 and {m.latency_us for m in rig.measurements if m.gpus == [0, 1]} == {14.95, 2.31}


def test_a_log_viewers_time_column_and_old_nccl_lines_are_read() -> None:
    # https://github.com/aws/aws-ofi-nccl/issues/715: "  | 2024-11-28T07:42:11.527Z | " before every line
    out, what = strip_prefix(
        "  | 2024-11-28T07:42:11.527Z | a\n  | 2024-11-28T07:42:11.528Z | b\n  | 2024-11-28T07:42:11.529Z | c\n"
    )
    assert (out, what) == ("a\nb\nc\n", "a log viewer's time column")
    # https://github.com/jade-hpc-gpu/jade-hpc-gpu.github.io/issues/43: NCCL 2.1 printed no "NCCL" before WARN/INFO
    import_files([_one("s15-nccl-debug/nccl-2-1-era-*.txt")])  # read, not refused


def test_systemds_failed_mark_is_a_failed_fabric_manager() -> None:
    # https://github.com/NVIDIA/NVSentinel/issues/883: "× nvidia-fabricmanager.service - ...", its Active: line cut
    rig = import_files([_one("s15-fabric/systemctl-status-fabricmanager-failed-*.txt")])
    assert rig.fabric.manager_state == "failed"


def test_a_gpu_whose_boot_firmware_never_finished_or_that_reads_all_ones_is_lost() -> None:
    # https://github.com/NVIDIA/open-gpu-kernel-modules/issues/543: "NVRM kgspWaitForGfwBootOk_TU102: failed to wait"
    assert [c for c, s, _ in _found(_one("s15-lost-gpu/dmesg-open-535-*.txt"))] == ["GA820"]
    # https://github.com/geerlingguy/raspberry-pi-pcie-devices/issues/26: nouveau "unknown chipset (ffffffff)"
    assert _found(_one("s15-lost-gpu/dmesg-grep-nouveau-*.txt")) == [("GA820", "fail", "GPU 0000:01:00.0")]


def test_another_vendors_accelerator_is_refused_in_one_line() -> None:
    # https://github.com/tenstorrent/tt-smi/issues/67: a Tenstorrent Blackhole ("Processing accelerators"), no NVIDIA
    with pytest.raises(InputError, match="another vendor's accelerator .*Processing accelerators"):
        import_files([_one("s15-not-read/lspci-vvv-d-tenstorrent-*.txt")])


def test_a_row_cut_in_its_in_place_half_keeps_its_out_of_place_half() -> None:
    # https://github.com/NVIDIA/nccl-tests/issues/214: "8192 ... 31.76 0.26 0.26 0 31.59 0.26 0." (cut)
    rig = import_files([_one("s15-nccl-tests/txt-fence-*.txt")])
    (m,) = [m for m in rig.measurements if m.kind == "all_reduce"]
    assert (m.rows[-1].size_bytes, m.rows[-1].busbw_gbps, m.value_gbps) == (8192, 0.26, 0.26)


def test_dcgmi_diag_gives_the_driver_and_lists_each_verdict() -> None:
    # https://github.com/NVIDIA/go-dcgm/issues/52: the Metadata rows, then "GPU Memory | Pass - GPU: 1 / Fail - GPU: 0"
    rig = import_files([_one("s15-dcgm/dcgmi-diag-r2-*.txt")])
    assert rig.software.driver_version == "535.129.03"
    rig = import_files([_one("s15-logs/dcgmi-diag-table-*.txt")])
    said = [p.split("dcgmi diag: ")[1] for p in rig.problems if "dcgmi diag: " in p]
    assert said == ["GPU Memory: Pass on GPU 1", "GPU Memory: Fail on GPU 0"]


def test_a_grep_over_the_sysfs_port_files_is_read_as_ports() -> None:
    # Linux Documentation/ABI/stable/sysfs-class-infiniband; the paste: https://github.com/stackhpc/ansible-slurm-appliance/pull/988
    from gpuadvisor.importers.rdma_ports import parse_sysfs

    lines = [
        "/sys/class/infiniband/mlx5_0/ports/1/state:1: DOWN",
        "/sys/class/infiniband/mlx5_0/ports/1/phys_state:3: Disabled",
        "/sys/class/infiniband/mlx5_0/ports/1/rate:400 Gb/sec (4X NDR)",
        "/sys/class/infiniband/mlx5_0/ports/1/link_layer:InfiniBand",
    ]
    (port,), elided = parse_sysfs(lines, 1)
    assert (port.device, port.port, port.state, port.phys_state, port.rate_gbps, port.link_layer, elided) == (
        "mlx5_0",
        1,
        "DOWN",
        "Disabled",
        400.0,
        "InfiniBand",
        None,
    )
    rig = import_files([_one("s15-rdma/sysfs-grep-*.txt")])
    assert [(p.device, p.state, p.rate_gbps) for p in rig.network.rdma_ports or []] == [
        ("mlx5_0", "ACTIVE", 100.0),
        ("mlx5_1", "ACTIVE", 100.0),
    ]


def test_perfquery_counters_without_their_header_are_a_port_whose_lid_is_not_shown() -> None:
    # https://github.com/linux-rdma/ibsim/pull/1: "PortSelect:....1" and the counters, no "# Port counters" line
    rig = import_files([_one("s15-rdma-logs/perfquery-ibsim-*.txt")])
    (port,) = rig.network.rdma_ports or []
    assert (port.device, port.port, port.counters["symbol_error"], port.counters["port_xmit_discards"]) == (
        "LID not shown",
        1,
        0,
        0,
    )
