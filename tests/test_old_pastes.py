"""Older and odder forms of GPU outputs, each class read on the corpus paste that showed it and on at least one
other real public sample of the same form (its URL cited), never on the tool's own output."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.importers import import_texts
from gpuadvisor.importers.section import OPEN_END

CORPUS = Path(__file__).parent / "corpus"


def _corpus(case: str) -> str:
    return (CORPUS / case).read_text(encoding="utf-8")


def _read(text: str, name: str = "paste.txt"):  # noqa: ANN202
    return import_texts([(name, text)])


# -- nccl-tests before its 2.13 resync (2022): each test printed only its own columns (src/*.cu print_header) --

# rccl-tests (nccl-tests' fork, same print code) all_gather_perf -np 16 -g 1, "Before:" block of
# https://github.com/ROCm/rccl/pull/930 (its first rows; count is per rank: 64 B = 1 float x 16 ranks)
_RCCL_930 = """\
#                                               out-of-place                       in-place
#       size         count      type     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
          64             1     float    33.75    0.00    0.00  0e+00    33.61    0.00    0.00  0e+00
         128             2     float    33.65    0.00    0.00  0e+00    33.78    0.00    0.00  0e+00
         256             4     float    33.72    0.01    0.01  0e+00    33.83    0.01    0.01  0e+00
         512             8     float    33.97    0.02    0.01  0e+00    33.72    0.02    0.01  0e+00
        1024            16     float    33.89    0.03    0.03  0e+00    33.93    0.03    0.03  0e+00
        2048            32     float    34.12    0.06    0.06  0e+00    34.09    0.06    0.06  0e+00
        4096            64     float    34.50    0.12    0.11  0e+00    34.58    0.12    0.11  0e+00
        8192           128     float    34.81    0.24    0.22  0e+00    34.78    0.24    0.22  0e+00
"""


def test_old_layout_rows_without_redop_and_a_per_rank_count_are_all_gather() -> None:
    """No redop, no root column: all_gather or sendrecv; a count of size / (type size x ranks) is all_gather's."""
    (m,) = _read(_RCCL_930).measurements
    assert (m.kind, m.value_gbps, m.rows[-1].size_bytes) == ("all_gather", 0.22, 8192)
    # rows only, no header (https://github.com/NVIDIA/nccl-tests/issues/44): 2 GPUs, count = size / 8
    (m,) = _read(_corpus("s8-nccl-tests/rows-old-format-2x2080ti-nvlink-avg-cut_alexwang1900.txt")).measurements
    assert (m.kind, m.value_gbps) == ("all_gather", 20.34)


def test_old_layout_rows_without_redop_and_a_whole_count_are_sendrecv() -> None:
    """https://github.com/NVIDIA/nccl-tests/issues/104: header shown, one row cut in its in-place half right under
    the column header (it stays that header's row); uint8, count = size: sendrecv."""
    rig = _read(_corpus("s16-nccl-tests/sendrecv-2x-gtx1080-one-size-36m-cut-in-place_timmywanttolearn.txt"))
    (m,) = rig.measurements
    assert (m.kind, m.value_gbps, m.world_size) == ("sendrecv", 5.82, 2)
    # the paste's fence never closes: the one note says rows may follow (nothing else is wrong with it)
    assert [p.split(": ", 2)[2] for p in rig.problems] == [OPEN_END]


def test_a_second_block_with_a_blank_redop_is_alltoall() -> None:
    """https://github.com/NVIDIA/nccl-tests/issues/78: an all_reduce block, then an alltoall block whose rows leave
    the redop column blank (src/alltoall.cu passed "" as its op name): two runs, two measurements."""
    rig = _read(_corpus("s9-nccl-tests/all_reduce-and-alltoall-rows-8x8-v100-ib-two-blocks_ngc7292.txt"))
    assert [(m.kind, m.value_gbps) for m in rig.measurements] == [("all_reduce", 4.32), ("alltoall", 0.51)]


# -- nvidia-smi -q -x pasted from inside one GPU's record: no root, closing tags of elements opened above ------------

# https://github.com/influxdata/telegraf/issues/16569 (its first lines): the paste starts inside
# <clocks_event_reasons> and closes it; the GPU's fb memory total is 12288 MiB
_TELEGRAF_16569 = """\
\t\t\t<clocks_event_reason_hw_power_brake_slowdown>Not Active</clocks_event_reason_hw_power_brake_slowdown>
\t\t\t<clocks_event_reason_sync_boost>Not Active</clocks_event_reason_sync_boost>
\t\t\t<clocks_event_reason_sw_thermal_slowdown>Not Active</clocks_event_reason_sw_thermal_slowdown>
\t\t\t<clocks_event_reason_display_clocks_setting>Not Active</clocks_event_reason_display_clocks_setting>
\t\t</clocks_event_reasons>
\t\t<sparse_operation_mode>N/A</sparse_operation_mode>
\t\t<fb_memory_usage>
\t\t\t<total>12288 MiB</total>
\t\t\t<reserved>368 MiB</reserved>
\t\t\t<used>116 MiB</used>
\t\t\t<free>11806 MiB</free>
\t\t</fb_memory_usage>
"""


def test_a_q_x_fragment_that_closes_elements_it_never_opened_is_read() -> None:
    """The fb memory total of the one GPU the fragment belongs to (12288 MiB; 6064 MiB in the corpus paste from
    https://github.com/netdata/netdata/issues/2922, which starts inside <pci_bridge_chip>)."""
    (g,) = _read(_TELEGRAF_16569).gpus
    assert (g.memory_total_bytes, g.name, g.bus_id) == (12288 * 2**20, None, None)
    (g,) = _read(_corpus("s16-smi-q/smi-q-x-fragment-pci-to-fb-memory-6064mib-no-header_scrumplex.txt")).gpus
    assert g.memory_total_bytes == 6064 * 2**20


def test_a_q_x_fragment_starting_at_a_closing_tag_is_recognised() -> None:
    """https://github.com/1Panel-dev/1Panel/issues/11910 (another excerpt than the corpus's; its &nbsp; and &gt;
    as the page renders them): '</pci>' first, then fan, P-state and the clocks event reasons, gpu_idle active; no
    GPU identified, nothing refused."""
    text = "</pci>\n<fan_speed>30 %</fan_speed>\n<performance_state>P0</performance_state>\n<clocks_event_reasons>\n"
    text += "<clocks_event_reason_gpu_idle>Active</clocks_event_reason_gpu_idle>\n"
    rig = _read(text)
    assert rig.gpus == []
    assert any("clocks event reasons active: gpu_idle" in p for p in rig.problems)
    assert not any("not recognised" in p for p in rig.problems)


def test_q_x_elements_run_together_on_one_line_are_read() -> None:
    """https://github.com/influxdata/telegraf/issues/15142: 'nvidia-smi -q -x | grep power' in inline code, its
    lines run together on one line, cut at '<pow': recognised, no GPU named, nothing refused."""
    rig = _read(_corpus("s19-smi-q/smi-q-x-grep-power-inline-code-one-line-padded-cut_jpvlerbe.txt"))
    assert rig.gpus == []
    assert any("nvidia-smi -q -x record" in p for p in rig.problems)


# -- a stray table border before topo -m's header -----------------------------------------------------------------


def test_a_topo_header_after_a_stray_table_border_is_the_header() -> None:
    """https://blog.chlc.cc/p/rtx4090-gpudirect-p2p-unlocked: a code block copied with its line-number gutter (on
    lines of their own, left unread) and '| ' before the header: 8 GPUs, GPU0 on NUMA node 3, every pair SYS."""
    rig = _read(
        _corpus("s15-topo/blog-line-number-gutter-topo-m-8x-rtx4090-all-sys-4-nics-on-gpu6-cut-at-nic2_chlc.txt")
    )
    assert len(rig.gpus) == 8
    assert (rig.gpus[0].numa_node, rig.gpus[7].cpu_affinity) == (3, "32-39,96-103")


# -- a --query-gpu row as a program's debug print shows it ---------------------------------------------------------


def test_a_noheader_row_inside_a_python_list_is_read_by_the_command_above() -> None:
    """https://github.com/Ricks-Lab/gpu-utils/issues/83: the command (19 fields, csv,noheader,nounits), a line of
    the program's own, then the row as ['200.00, 105.00, 292.00, 7979, ..., P2', '']: 7979 MiB, 200 W, 440.64."""
    rig = _read(
        _corpus("s15-smi-csv/query-gpu-csv-noheader-nounits-inside-python-debug-lists-rtx2080-cut_keithmyers.txt")
    )
    (g,) = rig.gpus
    assert (g.name, g.memory_total_bytes, g.power_limit_w) == ("GeForce RTX 2080", 7979 * 2**20, 200.0)
    assert rig.software.driver_version == "440.64"


# -- nvme list collapsed onto one line ----------------------------------------------------------------------------


def test_an_nvme_list_collapsed_onto_one_line_gives_each_drive() -> None:
    """https://nofu.jp/wiki/_export/xhtml/virtualization/proxmox_ve_6_2_how_to_use_nvme: '# nvme list', header,
    ruler and three rows on one line: a Micron 9200 of 1.60 TB, a PM983 of 960.20 GB, a PM963 of 1.92 TB."""
    rig = _read(_corpus("s19-storage/nvme-list-wiki-export-one-line-micron-9200-two-samsung-pm983-pm963_nofu.txt"))
    drives = [(d.name, d.model, d.size_bytes) for p in rig.storage.paths for d in p.devices]
    assert drives == [
        ("nvme0n1", "Micron_9200_MTFDHAL1T6TCU", 1_600_000_000_000),
        ("nvme1n1", "SAMSUNG MZQLB960HAJR-00007", 960_200_000_000),
        ("nvme2n1", "SAMSUNG MZQLW1T9HMJP-00003", 1_920_000_000_000),
    ]


# -- cudnn-frontend's collect_env report ---------------------------------------------------------------------------


def test_cudnn_frontends_collect_env_gives_the_driver_and_gpus() -> None:
    """https://github.com/NVIDIA/cudnn-frontend/pull/400 (the report's format: python/cudnn/collect_env.py,
    _get_gpu_info): 'Driver version : 595.71.05', 'GPU 0 (CUDA order) : NVIDIA L40S | SM89 | ...', GPU 1's name cut."""
    rig = _read(_corpus("s16-collect-env/cudnn-frontend-collect-env-595-l40s-second-gpu-name-cut_yangxu1990uiuc.txt"))
    assert rig.software.driver_version == "595.71.05"
    assert [g.name for g in rig.gpus] == ["NVIDIA L40S", None]


# -- nvidia-container-cli info ---------------------------------------------------------------------------------------


def test_nvidia_container_cli_info_gives_the_driver_and_each_gpu() -> None:
    """https://github.com/NVIDIA/nvidia-docker/issues/1506 (the format: libnvidia-container src/cli/info.c and
    src/nvc_info.c's 'listing device' log line): driver 465.19.01, CUDA 11.3, eight GPUs by UUID and bus id, the
    first named in its block (cut at 'Bus Loc')."""
    rig = _read(_corpus("s16-collect-env/nvidia-container-cli-info-465-8x-rtx2080ti-cut-in-device-0_ethanabrooks.txt"))
    assert (rig.software.driver_version, rig.software.cuda_driver_version) == ("465.19.01", "11.3")
    assert [g.bus_id for g in rig.gpus][:3] == ["0000:1a:00.0", "0000:1b:00.0", "0000:60:00.0"]
    assert (rig.gpus[0].name, rig.gpus[7].uuid) == (
        "NVIDIA GeForce RTX 2080 Ti",
        "GPU-a664610b-dc7d-1a19-30cd-2424a8f6f77e",
    )
    assert all(g.name is None for g in rig.gpus[1:])
