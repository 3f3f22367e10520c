"""Held-out set 22's reading classes (collect-env, DCGM, nccl-tests, storage, topo), each on its s22 paste and another
real public sample of the same form.

Values are the pastes' own (quoted in each test), never this tool's output."""

from __future__ import annotations

from gpuadvisor.importers import import_texts
from gpuadvisor.importers.merge import import_files
from gpuadvisor.importers.prefixed import strip_prefix
from gpuadvisor.rules import evaluate
from tests.corpus_cases import corpus_file as _one


def _paste(name: str, text: str):
    """The scan of a public sample quoted in this file."""
    return import_texts([(name, text)])


def _codes(rig) -> set[str]:
    """The codes of the findings at warn or worse."""
    return {f.code for f in evaluate(rig) if f.severity in ("warn", "fail")}


# --- class 1: llama.cpp's older device list (ggml_init_cublas, before 2024) ---


def test_ggml_init_cublas_lists_both_gpus_and_mixed_models_fire():
    # https://github.com/ggml-org/llama.cpp/pull/2506: 'ggml_init_cublas: found 2 CUDA devices:', Device 0 Tesla P40
    # (compute capability 6.1), Device 1 NVIDIA GeForce GTX 970 (5.2), the fence closing right after the second
    rig = import_files([_one("s22-collect-env/llamacpp-ggml-init-cublas-*.txt")])
    assert [(g.name, g.compute_capability) for g in rig.gpus] == [
        ("Tesla P40", "6.1"),
        ("NVIDIA GeForce GTX 970", "5.2"),
    ]
    assert "GA301" in _codes(rig)


_CUBLAS_2023_07 = """\
```
PS E:\\LLaMA\\llamacpp> .\\main.exe --model e:\\LLaMA\\models\\airoboros-7b-gpt4.ggmlv3.q4_0.bin -ngl 32 -n 30
main: build = 820 (20d7740)
main: seed  = 1689137712
ggml_init_cublas: found 1 CUDA devices:
  Device 0: NVIDIA GeForce RTX 2060, compute capability 7.5
llama.cpp: loading model from e:\\LLaMA\\models\\airoboros-7b-gpt4.ggmlv3.q4_0.bin
llama_model_load_internal: format     = ggjt v3 (latest)
"""

_CUBLAS_2023_06 = """\
```
 Q:\\ggllm.cpp> .\\build\\bin\\Release\\falcon_main.exe -t 31 -m Q:\\models\\falcon-40b\\q5_1 -n 50 -ngl 0
main: build = 677 (dd3d346)
main: seed  = 1687010794
ggml_init_cublas: found 1 CUDA devices:
  Device 0: NVIDIA GeForce RTX 3090
falcon.cpp: loading model from Q:\\models\\falcon-40b\\q5_1
falcon_model_load_internal: format     = ggjt v3 (latest)
```
"""


def test_ggml_init_cublas_without_vmm_and_without_compute_capability():
    # https://github.com/ggml-org/llama.cpp/issues/2187 (build 820, July 2023: no 'VMM:' yet): one RTX 2060, 7.5
    rig = _paste("llama-2187.txt", _CUBLAS_2023_07)
    assert [(g.name, g.compute_capability) for g in rig.gpus] == [("NVIDIA GeForce RTX 2060", "7.5")]
    # ggllm.cpp's README (https://github.com/cmp-nct/ggllm.cpp, build 677, June 2023): the device's name alone,
    # under its 'found 1 CUDA devices' line; the compute capability not printed (unknown, never guessed)
    rig = _paste("ggllm-readme.txt", _CUBLAS_2023_06)
    assert [(g.name, g.compute_capability) for g in rig.gpus] == [("NVIDIA GeForce RTX 3090", None)]


def test_bare_device_line_is_never_a_gpu_without_its_found_line():
    # 'Device 0: NAME' alone is too common a line (deviceQuery's, nvcc's ...) to be llama.cpp's without its header
    text = "some log\n  Device 0: NVIDIA GeForce RTX 3090\nmore log\n"
    try:
        rig = _paste("bare.txt", text)
    except Exception:  # refused: nothing recognised
        return
    assert not rig.gpus


# --- class 2: a paste wrapped in ONE markdown inline code span across its lines ---


def test_one_inline_span_across_lines_is_read_as_a_fence():
    # https://github.com/NVIDIA/nvidia-docker/issues/548: '`sudaraka@RnDCompute:~$ nvcc --version' ... 'V8.0.62`':
    # the CUDA 8.0 compiler, which says nothing about the driver; not refused, nothing unread
    path = _one("s22-collect-env/nvcc-version-8-0-inline-backticks-*.txt")
    rig = import_files([path])
    assert (rig.software.driver_version, rig.software.cuda_driver_version) == (None, None)
    assert not [p for p in rig.problems if "not recognised" in p]


def test_two_inline_spans_in_prose_are_not_one_span():
    # a line that opens a span and closes it mid-line is prose quoting a command, not a paste wrapped in a span
    out, _ = strip_prefix("`nvcc --version` prints:\nCuda compilation tools, release 8.0, V8.0.62 and `nvidia-smi`\n")
    assert out.startswith("`nvcc --version` prints:")


# --- class 3: gpustat -P's power cell (draw / enforced power limit) ---


def test_gpustat_power_cell_gives_the_power_limit():
    # https://github.com/wookayin/gpustat/issues/43: 'gpustat -ucpP' in a loop, '[0] GeForce GTX 1070 | 63'C,  10 %,
    # 39 / 151 W |   552 /  8116 MB | ...' four times: one GPU, 151 W, 8116 MiB
    rig = import_files([_one("s22-collect-env/gpustat-ucpP-*.txt")])
    assert [(g.name, g.power_limit_w, g.memory_total_bytes) for g in rig.gpus] == [
        ("GeForce GTX 1070", 151.0, 8116 * 1048576)
    ]


_GPUSTAT_FULL = """\
[0] GeForce GTX TITAN 0 | 80'C,  16 %,  76 %,  125 / 250 W |  8000 / 12287 MB | user1:python/48448(4000M)
[1] GeForce GTX TITAN 1 | 36'C,  53 %,   0 %,   ?? / 250 W |  9000 / 12189 MB | user1:torch/192453(3000M)
[2] GeForce GTX TITAN 2 | 71'C, 100 %,  ?? %,  250 /  ?? W |     0 / 12189 MB | (Not Supported)
"""


def test_gpustat_power_cell_with_fan_speed_and_unknown_values():
    # gpustat's own expected output with --show-fan and --show-power (MOCK_EXPECTED_OUTPUT_FULL in
    # https://github.com/wookayin/gpustat/blob/master/gpustat/test_gpustat.py, processes shortened): the limit is the
    # number after the slash; '??' (NVML gave none) is unknown, never 0, and an unknown draw does not hide the limit
    rig = _paste("gpustat-full.txt", _GPUSTAT_FULL)
    assert [g.power_limit_w for g in rig.gpus] == [250.0, 250.0, None]
    assert "??" in rig.gpus[2].unavailable["power_limit_w"]


# --- class 4: nccl-tests rows behind mpirun's '[1,0]<stdout>:' tags, the paste indented; alltoall from its rows ---


def test_tagged_indented_alltoall_rows_are_measured():
    # https://github.com/bottlerocket-os/bottlerocket-kernel-kit/pull/313: every row '        [1,0]<stdout>:' (the
    # fence at the margin, the rows indented), redop none, root -1, the in-place #wrong N/A: alltoall on 16 ranks,
    # busbw 2.31 GB/s (out-of-place) at 512 KiB, the 1 MiB row cut after its time
    rig = import_files([_one("s22-nccl-tests/nccl-tests-mpirun-tagged-alltoall-*.txt")])
    assert [(m.kind, m.value_gbps) for m in rig.measurements] == [("alltoall", 2.31)]


_EFA_BLUEPRINT = """\
    ```text
    ...
    [1,0]<stdout>:#                                                              out-of-place                       in-place
    [1,0]<stdout>:#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
    [1,0]<stdout>:#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
    [1,0]<stdout>:  8589934592    2147483648     float     sum      -1    33611  255.57  479.19      0    34474  249.17  467.20      0
    [1,0]<stdout>: 17179869184    4294967296     float     sum      -1    66988  256.46  480.87      0    66717  257.50  482.82      0
    [1,0]<stdout>:# Out of bounds values : 0 OK
    [1,0]<stdout>:# Avg bus bandwidth    : 123.343
    ```
"""  # noqa: E501


def test_tagged_rows_in_an_indented_list_item_are_measured():
    # https://github.com/aws-ia/terraform-aws-eks-blueprints/blob/main/patterns/nvidia-gpu-efa/README.md (a list
    # item's fenced block, every line '    [1,0]<stdout>:'; the last two rows): all_reduce, 480.87 GB/s at 16 GiB
    rig = _paste("efa-blueprint.txt", _EFA_BLUEPRINT)
    assert [(m.kind, m.value_gbps) for m in rig.measurements] == [("all_reduce", 480.87)]


def test_alltoall_is_told_from_all_gather_by_its_unchecked_in_place_half():
    # https://github.com/NVIDIA/nccl/issues/2169 (alltoall_perf on 4 H100s, its first row, pasted without the header):
    # per-rank count (524288000 = 32768000 x 4 B x 4 ranks), no op, no root, in-place #wrong N/A (src/alltoall.cu:
    # "We don't support in-place alltoall"); the same row checked in place (0) is all_gather's or alltoall's: unnamed
    row = (
        "   524288000      32768000     float    none      -1  1174.14  446.53  334.90       0  1163.40  450.65  337.99"  # noqa: E501
    )
    rig = _paste("rows.txt", row + "    N/A\n")
    assert [(m.kind, m.value_gbps) for m in rig.measurements] == [("alltoall", 334.90)]
    rig = _paste("rows.txt", row + "      0\n")
    assert [m.kind for m in rig.measurements] == ["collective"]


# --- class 5: dcgmi dmon -l's field catalogue: read as holding nothing about the machine ---


def test_dcgmi_dmon_field_catalogue_is_a_note_and_its_names_are_no_values():
    # https://github.com/guilbaults/slurm-job-exporter/issues/4: '# dcgmi dmon -l', the catalogue (driver_version
    # DRVER 1, cuda_driver_version CDVER 5, ...), cut in 'oem_inforom_version OEMVR': no GPU, no driver version
    rig = import_files([_one("s22-dcgm/dcgmi-dmon-l-*.txt")])
    assert (rig.gpus, rig.software.driver_version, rig.software.cuda_driver_version) == ([], None, None)
    assert any("dcgmi dmon -l" in p for p in rig.problems)


_DMON_L_AZUREHPC = """\
/usr/bin/dcgmi dmon -l

___________________________________________________________________________________
           Long Name                              Short Name       Field Id
___________________________________________________________________________________
driver_version                                         DRVER              1
nvml_version                                           NVVER              2
cuda_driver_version                                    CDVER              5
name                                                   DVNAM             50
uuid                                                   UUID#             54
pci_busid                                              PCBID             57
bar1_total                                             B1TTL             90
memory_clock                                           MMCLK            101

etc
"""


def test_dcgmi_dmon_field_catalogue_of_a_docs_page_reads_no_gpu():
    # https://github.com/Azure/azurehpc/blob/master/experimental/gpu_monitoring/readme.md ('dcgmi dmon -l', rows
    # shortened, its 'etc' after them): the catalogue alone, no GPU, no bus id, no UUID, no driver
    rig = _paste("azurehpc.txt", _DMON_L_AZUREHPC)
    assert (rig.gpus, rig.software.driver_version) == ([], None)
    assert any("catalogue of 8 field(s)" in p for p in rig.problems)


# --- class 6: Incus's (and LXD's) resource listing of a GPU ---


def test_incus_gpu_section_empty_nvidia_fields_are_not_shown():
    # https://github.com/lxc/incus/issues/1322: PCI address 0000:01:00.0, NUMA node 0, Driver: nvidia (560.35.03),
    # 'NVIDIA information:' with Model 'NVIDIA GeForce RTX 3060 Ti' and empty Architecture, CUDA Version, UUID
    rig = import_files([_one("s22-collect-env/incus-info-resources-*.txt")])
    assert [(g.bus_id, g.numa_node, g.name, g.compute_capability) for g in rig.gpus] == [
        ("0000:01:00.0", 0, "NVIDIA GeForce RTX 3060 Ti", None)
    ]
    assert (rig.software.driver_version, rig.software.cuda_driver_version) == ("560.35.03", None)
    assert "empty" in rig.software.unavailable["cuda_driver_version"]
    assert "empty" in rig.gpus[0].unavailable["compute_capability"]


_LXD_6195 = """\
Memory:
  Free: 27.03GB
  Used: 6.65GB
  Total: 33.67GB

GPU:
  NUMA node: 0
  Vendor: NVIDIA Corporation (10de)
  Product: GM204 [GeForce GTX 970] (13c2)
  PCI address: 0000:01:00.0
  Driver: nvidia (418.74)
  DRM:
    ID: 0
    Card: card0 (226:0)
    Render: renderD128 (226:128)

NIC:
  NUMA node: 0
  Vendor: Realtek Semiconductor Co., Ltd. (10ec)
"""


def test_lxd_gpu_section_without_nvidia_block_gives_bus_driver_and_product_name():
    # https://github.com/canonical/lxd/issues/6195 ('lxc info --resources' on the host, LXD 3.17): one GTX 970 at
    # 0000:01:00.0, driver nvidia 418.74, no 'NVIDIA information' block: no UUID, no CUDA version; the NIC below
    # (a Realtek, 10ec) is no GPU
    rig = _paste("lxd-6195.txt", _LXD_6195)
    assert [(g.bus_id, g.name, g.uuid) for g in rig.gpus] == [("0000:01:00.0", "GeForce GTX 970", None)]
    assert (rig.software.driver_version, rig.software.cuda_driver_version) == ("418.74", None)


# --- class 7: smartctl -a on an NVMe drive, read as a storage device ---


def test_smartctl_nvme_drive_is_a_storage_device_with_its_health_noted():
    # https://github.com/ZaidQureshi/bam/issues/37: smartctl 7.1, INTEL MEMPEK1W016GA, one namespace of
    # 14,403,239,936 bytes, SMART PASSED, 30 Celsius, cut in the health log
    rig = import_files([_one("s22-storage/smartctl-7-1-nvme-*.txt")])
    (dev,) = rig.storage.paths[0].devices
    assert (dev.kind, dev.model, dev.size_bytes) == ("nvme", "INTEL MEMPEK1W016GA", 14403239936)
    assert any("self-assessment: PASSED" in p for p in rig.problems)
    assert any("temperature 30 C" in p for p in rig.problems)


_SMARTCTL_746 = """\
```
$ sudo smartctl -a /dev/nvme1
smartctl 7.3 2022-02-28 r5338 [x86_64-linux-6.1.44] (local build)
Copyright (C) 2002-22, Bruce Allen, Christian Franke, www.smartmontools.org

=== START OF INFORMATION SECTION ===
Model Number:                       SAMSUNG MZVLB1T0HALR-00000
Serial Number:                      S3W6NX0M803001
Firmware Version:                   EXA7301Q
PCI Vendor/Subsystem ID:            0x144d
IEEE OUI Identifier:                0x002538
Total NVM Capacity:                 1,024,209,543,168 [1.02 TB]
Unallocated NVM Capacity:           0
Controller ID:                      4
NVMe Version:                       1.2
Number of Namespaces:               1
Namespace 1 Size/Capacity:          1,024,209,543,168 [1.02 TB]
Namespace 1 Utilization:            521,226,092,544 [521 GB]
```
"""

_SMARTCTL_TKPERF = """\
=== START OF INFORMATION SECTION ===
Model Number:                       INTEL SSDPE2KE016T7
Serial Number:                      PHLE727300XA1P6CGN
Firmware Version:                   QDV10190
PCI Vendor/Subsystem ID:            0x8086
IEEE OUI Identifier:                0x5cd2e4
Total NVM Capacity:                 1.600.321.314.816 [1,60 TB]
Unallocated NVM Capacity:           0
"""


def test_smartctl_nvme_named_by_its_command_and_sized_in_any_locale():
    # https://github.com/nix-community/infra/issues/746 ('sudo smartctl -a /dev/nvme1', its information section):
    # SAMSUNG MZVLB1T0HALR-00000, Total NVM Capacity 1,024,209,543,168 bytes (tnvmcap), the device nvme1
    (dev,) = _paste("nix-746.txt", _SMARTCTL_746).storage.paths[0].devices
    assert (dev.name, dev.model, dev.size_bytes) == ("nvme1", "SAMSUNG MZVLB1T0HALR-00000", 1024209543168)
    # https://github.com/thomas-krenn/TKperf/issues/25 (a German locale: '1.600.321.314.816 [1,60 TB]'), the
    # section pasted from its heading: INTEL SSDPE2KE016T7 of 1,600,321,314,816 bytes
    (dev,) = _paste("tkperf-25.txt", _SMARTCTL_TKPERF).storage.paths[0].devices
    assert (dev.model, dev.size_bytes) == ("INTEL SSDPE2KE016T7", 1600321314816)


# --- class 8: topo -m rendered as a table by a web page ---


def test_pipe_table_with_its_header_shifted_is_read_from_its_rows():
    # https://docs.alcf.anl.gov/polaris/hardware-overview/machine-overview: 'CPU Affinity | NUMA Affinity | GPU0 ...'
    # over rows '24-31,56-63 | 3 | GPU0 | X | NV4 ...': every GPU pair NV4, mlx5_0 PHB to GPU3, mlx5_1 PHB to GPU1
    rig = import_files([_one("s22-topo/topo-polaris-docs-*.txt")])
    assert [(g.cpu_affinity, g.numa_node) for g in rig.gpus] == [
        ("24-31,56-63", 3),
        ("16-23,48-55", 2),
        ("8-15,40-47", 1),
        ("0-7,32-39", 0),
    ]
    assert rig.topology.matrix[0] == ["X", "NV4", "NV4", "NV4"]
    assert rig.topology.nic_matrix == [["SYS", "SYS"], ["SYS", "PHB"], ["SYS", "SYS"], ["PHB", "SYS"]]
    assert any("header shifted" in p for p in rig.problems)


_GIST_ASHWIN = """\
$ nvidia-smi topo -m | |
GPU0 GPU1 GPU2 GPU3 CPU Affinity | |
GPU0 X PHB SOC SOC 0-9,20-29 | |
GPU1 PHB X SOC SOC 0-9,20-29 | |
GPU2 SOC SOC X PHB 10-19,30-39 | |
GPU3 SOC SOC PHB X 10-19,30-39 | |
"""


def test_a_page_rendering_each_printed_line_in_one_cell_is_read():
    # https://gist.github.com/ashwin/e139748bdba15f5af63f0146d01ee4c3 (as the page renders it, each line a table row
    # with empty cells after it): four GPUs, PHB within a pair, SOC (read as SYS) across, CPU affinity by pair
    rig = _paste("gist.txt", _GIST_ASHWIN)
    assert rig.topology.matrix == [
        ["X", "PHB", "SYS", "SYS"],
        ["PHB", "X", "SYS", "SYS"],
        ["SYS", "SYS", "X", "PHB"],
        ["SYS", "SYS", "PHB", "X"],
    ]
    assert [g.cpu_affinity for g in rig.gpus] == ["0-9,20-29", "0-9,20-29", "10-19,30-39", "10-19,30-39"]
    assert not [p for p in rig.problems if "not recognised" in p and "GPU0" in p]  # its header line read too


def test_an_unclosed_span_costs_time_linear_in_the_paste():
    # a backtick opening a line, then thousands of lines with none: the span is looked for once, not per line pair
    import time

    text = "`start here\n" + "some line of text\n" * 20000
    t = time.process_time()
    out, _ = strip_prefix(text)
    assert out == text and time.process_time() - t < 2.0
