"""Held-out set 29's reading classes (TensorFlow's peer matrix, an nvidia-smi -q record without its indent, vLLM's
sectioned collect_env, nvbandwidth's header, detect-gpu's JSON, dcgmi profile -l, Folding@home's PCI listing), each
on its s29 paste and another real public sample of the same form.

Values are the pastes' own (quoted in each test), never this tool's output."""

from __future__ import annotations

import json

from gpuadvisor.importers import import_texts
from tests.test_s21_reading import CORPUS, _read

# --- class 1: TensorFlow's peer access matrix (2.x's edge matrix, 1.x's DMA matrix) ---


def test_tf_edge_matrix_counts_four_gpus_and_no_peer_access():
    # https://github.com/tensorflow/tensorflow/issues/24677: 'Adding visible gpu devices: 0, 1, 2, 3', the edge matrix
    # '0:   N N N N' ... '3:   N N N N', two 'Created TensorFlow device' lines (RTX 2080 Ti at 05:00.0 and 06:00.0)
    rig = _read(CORPUS / "s29-topo" / "tf-log-edge-matrix-all-n-4x-rtx2080ti-created-devices-cut_skang29.txt")
    assert [(g.index, g.bus_id) for g in rig.gpus] == [(0, "0000:05:00.0"), (1, "0000:06:00.0"), (2, None), (3, None)]
    assert rig.topology.p2p_read == [["X" if a == b else "NS" for b in range(4)] for a in range(4)]


def test_tf_blockquoted_dma_matrix_reads_all_pairs_ok():
    # https://github.com/tensorflow/tensorflow/issues/23215: '> ... Device peer to peer matrix', '> ... DMA: 0 1 2 3',
    # '> ... 0:   Y Y Y Y' (four rows, all Y)
    rig = _read(CORPUS / "s29-topo" / "tf-log-blockquoted-dma-peer-matrix-all-y-4-gpus_scotthuang1989.txt")
    assert [g.index for g in rig.gpus] == [0, 1, 2, 3]
    assert rig.topology.p2p_write == [["X" if a == b else "OK" for b in range(4)] for a in range(4)]


def test_another_tf1_dma_matrix_with_peer_access_between_pairs_only():
    # https://github.com/mozilla/DeepSpeech/issues/661: 'Peer access not supported between device ordinals 0 and 3'
    # (and five more such lines), 'DMA: 0 1 2 3', '0:   Y Y N N', '1:   Y Y N N' (the rows of 2 and 3 not quoted)
    log = "I tensorflow/core/common_runtime/gpu/gpu_device.cc:{}] {}\n"
    said = [
        (779, f"Peer access not supported between device ordinals {a} and {b}")
        for a, b in ((0, 3), (1, 2), (1, 3), (2, 0), (2, 1), (3, 0), (3, 1))
    ]
    said += [(908, "DMA: 0 1 2 3 "), (918, "0:   Y Y N N "), (918, "1:   Y Y N N ")]
    text = "".join("2017-06-28 16:04:54.004792: " + log.format(n, x) for n, x in said)
    rig = import_texts([("deepspeech.log", text)])
    assert [g.index for g in rig.gpus] == [0, 1, 2, 3]
    read = rig.topology.p2p_read
    assert read is not None
    assert (read[0][1], read[0][2], read[1][3], read[2][0], read[3][1]) == ("OK", "NS", "NS", "NS", "NS")
    assert read[2][3] == "U"  # neither a row nor a 'not supported' line says


def test_another_tf2_edge_matrix_of_two_gpus():
    # https://github.com/tensorflow/tensorflow/issues/50285: 'Device interconnect StreamExecutor with strength 1 edge
    # matrix:', '     0 1 ', '0:   N N ' (TF 2.4; the thread's excerpt ends there)
    log = "2021-06-15 17:58:51.972609: I tensorflow/core/common_runtime/gpu/gpu_device.cc:{}] {}\n"
    text = "".join(
        log.format(n, x)
        for n, x in (
            (1261, "Device interconnect StreamExecutor with strength 1 edge matrix:"),
            (1267, "     0 1 "),
            (1280, "0:   N N "),
        )
    )
    rig = import_texts([("tf.log", text)])
    assert len(rig.gpus) == 2
    assert rig.topology.p2p_read == [["X", "NS"], ["U", "X"]]  # GPU 1's row not shown


# --- class 2: an nvidia-smi -q record whose indentation was lost ---


def test_flattened_smi_q_reads_the_product_name_and_pcie_link():
    # https://github.com/NVIDIA/nvidia-docker/issues/1170: 'GPU 00000000:04:00.0', 'Product Name : GeForce GTX 1060
    # 6GB', 'PCI' ... 'PCIe Generation' 'Max : 3' 'Current : 1', 'Link Width' 'Max : 16x' 'Current : 16x', every line
    # at the margin
    rig = _read(CORPUS / "s29-smi-q" / "smi-q-flattened-no-indent-gtx1060-gen1-idle-cut_yuanbing.txt")
    g = rig.gpus[0]
    assert (g.name, g.bus_id, g.uuid) == (
        "GeForce GTX 1060 6GB",
        "0000:04:00.0",
        "GPU-ce0f01b1-4ce8-cedf-87bd-a1dd645be8d7",
    )
    assert (g.pcie.max_gen, g.pcie.current_gen, g.pcie.max_width, g.pcie.current_width) == (3, 1, 16, 16)
    assert g.pcie.replay_counter == 0  # 'Replays Since Reset : 0' after 'Bridge Chip': PCI's, not the bridge's


_NVSMI_954 = """==============NVSMI LOG==============

Timestamp                           : Sun Apr 14 18:55:20 2019
Driver Version                      : 396.54

Attached GPUs                       : 1
GPU 00000000:01:00.0
    Product Name                    : GeForce GTX 1080
    Product Brand                   : GeForce
    Display Mode                    : Enabled
    Display Active                  : Enabled
    Persistence Mode                : Disabled
    Accounting Mode                 : Disabled
    Accounting Mode Buffer Size     : 4000
    Driver Model
        Current                     : N/A
        Pending                     : N/A
    Serial Number                   : N/A
    GPU UUID                        : GPU-0200523e-f473-3a45-9b4a-fbbe0e41ccf8
    Minor Number                    : 0
    VBIOS Version                   : 86.04.60.00.80
"""


def test_another_smi_q_record_read_alike_with_and_without_its_indent():
    # https://github.com/NVIDIA/nvidia-docker/issues/954: driver 396.54, one GeForce GTX 1080 at 00000000:01:00.0,
    # persistence Disabled, its UUID; the record as posted, and as a paste that trims each line's indent shows it
    flat = "\n".join(" ".join(x.split()) for x in _NVSMI_954.splitlines()) + "\n"
    for text in (_NVSMI_954, flat):
        rig = import_texts([("q.txt", text)])
        g = rig.gpus[0]
        assert (g.name, g.bus_id, g.persistence_mode) == ("GeForce GTX 1080", "0000:01:00.0", False)
        assert g.uuid == "GPU-0200523e-f473-3a45-9b4a-fbbe0e41ccf8"
        assert rig.software.driver_version == "396.54"


# --- class 3: vLLM's sectioned collect_env ('====' banners over padded 'Key   : value' lines) ---


def test_vllm_sectioned_collect_env_reads_torch_and_its_cuda():
    # https://github.com/vllm-project/vllm/issues/19022: from its first banner ('System Info'): 'PyTorch version
    # : 2.7.0+cu126', 'CUDA used to build PyTorch   : 12.6', 'GPU 0: NVIDIA L4', 'GPU 1: NVIDIA L4', 'Nvidia driver
    # version        : 565.57.01'
    rig = _read(CORPUS / "s29-collect-env" / "vllm-collect-env-sectioned-torch-2-7-cu126-2x-l4-565-cut_nihalucube.txt")
    sw = rig.software
    assert (sw.torch_version, sw.torch_cuda_version, sw.driver_version) == ("2.7.0+cu126", "12.6", "565.57.01")
    assert [g.name for g in rig.gpus] == ["NVIDIA L4", "NVIDIA L4"]


_OMNI_429 = """==============================
        System Info
==============================
OS                           : Ubuntu 22.04.5 LTS (x86_64)
GCC version                  : (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0
Clang version                : Could not collect
CMake version                : Could not collect
Libc version                 : glibc-2.35

==============================
       PyTorch Info
==============================
PyTorch version              : 2.9.0+cu128
Is debug build               : False
CUDA used to build PyTorch   : 12.8
ROCM used to build PyTorch   : N/A

==============================
      Python Environment
==============================
Python version               : 3.10.12 (main, Nov  6 2024, 20:22:13) [GCC 11.4.0] (64-bit runtime)
Python platform              : Linux-5.15.0-128-generic-x86_64-with-glibc2.35

==============================
       CUDA / GPU Info
==============================
Is CUDA available            : False
CUDA runtime version         : No CUDA
CUDA_MODULE_LOADING set to   : N/A
GPU models and configuration : No CUDA
"""


def test_another_vllm_sectioned_report_with_and_without_its_first_line():
    # https://github.com/vllm-project/vllm-omni/pull/429: 'Collecting environment information...' over the banners,
    # 'PyTorch version              : 2.9.0+cu128', 'CUDA used to build PyTorch   : 12.8', no CUDA device
    for text in ("Collecting environment information...\n" + _OMNI_429, _OMNI_429):
        rig = import_texts([("env.txt", text)])
        assert (rig.software.torch_version, rig.software.torch_cuda_version) == ("2.9.0+cu128", "12.8")
        assert rig.gpus == []


# --- class 4: nvbandwidth's header (CUDA Runtime / CUDA Driver / Driver Version) ---


def test_nvbandwidth_header_gives_the_drivers_cuda_version():
    # https://github.com/NVIDIA/nvbandwidth/issues/48: 'CUDA Runtime Version: 12060', 'CUDA Driver Version: 12060',
    # 'Driver Version: 550.127.08', eight 'NVIDIA H20-3e'
    rig = _read(CORPUS / "s29-cuda-samples" / "nvbandwidth-device-local-copy-8x-h20-3e-1116gbps-cut_yoqiu-amd.txt")
    assert (rig.software.driver_version, rig.software.cuda_driver_version) == ("550.127.08", "12.6")
    assert len(rig.gpus) == 8


def test_another_nvbandwidth_header_of_cuda_13():
    # https://github.com/NVIDIA/nvbandwidth/issues/61: posted as one inline code span; v0.8, 'CUDA Driver Version:
    # 13000', 'Driver Version: 580.126.09', eight H100 80GB HBM3 (two PCI domains), then the PTX error
    devices = ("00000000:1b", "00000000:29", "00000000:45", "00000000:4e", "00000001:1b", "00000001:24")
    devices += ("00000001:45", "00000001:4e")
    text = (
        "`nvbandwidth Version: v0.8\nBuilt from Git version: v0.8\n\nCUDA Runtime Version: 13000\n"
        "CUDA Driver Version: 13000\nDriver Version: 580.126.09\n\nquiet-lemur\n"
        + "".join(f"Device {i}: NVIDIA H100 80GB HBM3 ({bus}:00)\n" for i, bus in enumerate(devices))
        + "\nRunning host_to_device_memcpy_ce.\n[cudaErrorUnsupportedPtxVersion] the provided PTX was compiled with an "
        "unsupported toolchain. in expression cudaGetLastError() in CUresult memsetKernel(CUstream, CUdeviceptr, "
        "CUdeviceptr, long long unsigned int, unsigned int)() : /home/diag/nvbandwidth/kernels.cu:406`\n"
    )
    rig = import_texts([("nvbw.txt", text)])
    assert (rig.software.driver_version, rig.software.cuda_driver_version) == ("580.126.09", "13.0")
    assert [g.bus_id for g in rig.gpus][3:5] == ["0000:4e:00.0", "0001:1b:00.0"]


# --- class 5: detect-gpu's JSON (NVML fields per GPU) ---

_DETECT_GPU = CORPUS / "s29-smi" / "detect-gpu-json-4x-a10-nvml-fields-cut_flybirdkh.txt"


def test_detect_gpu_json_reads_four_a10s_and_the_driver():
    # https://github.com/mayooot/detect-gpu/issues/3: 'name":"NVIDIA A10"', 'memoryInfo":{"Total":24146608128',
    # 'powerUsage":64810', 'powerManagementDefaultLimit":150000', 'systemGetDriverVersion":"535.129.03"',
    # 'systemGetCudaDriverVersion":12020'; the fourth object cut in 'memoryInf'
    rig = _read(_DETECT_GPU)
    assert [(g.index, g.name) for g in rig.gpus] == [(i, "NVIDIA A10") for i in range(4)]
    assert [g.memory_total_bytes for g in rig.gpus] == [24146608128] * 3 + [None]
    assert (rig.gpus[0].power_draw_w, rig.gpus[0].power_default_limit_w, rig.gpus[0].power_limit_w) == (
        64.81,
        150,
        None,
    )
    assert rig.gpus[3].uuid == "GPU-549d4781-e9e2-3be8-0c08-890269df339d"
    assert (rig.software.driver_version, rig.software.cuda_driver_version) == ("535.129.03", "12.2")
    assert all(g.bus_id is None for g in rig.gpus)


def test_detect_gpu_json_pretty_printed_reads_alike():
    # the same thread's first two objects (https://github.com/mayooot/detect-gpu/issues/3), as `jq .` prints them:
    # field names as detect-gpu's gpuInfo struct gives them (pkg/detect/model.go in mayooot/detect-gpu)
    objects = json.loads(_DETECT_GPU.read_text()[: _DETECT_GPU.read_text().index(',{"index":2')] + "]")
    rig = import_texts([("gpus.json", json.dumps(objects, indent=2) + "\n")])
    assert [(g.name, g.performance_state) for g in rig.gpus] == [("NVIDIA A10", 0), ("NVIDIA A10", 8)]
    assert rig.gpus[1].memory_used_bytes == 541917184


# --- class 6: dcgmi profile -l (the profiling metric groups of one GPU): recognised, nothing to judge ---


def test_dcgmi_profile_list_is_read_as_a_note_without_a_gpu():
    # https://github.com/NVIDIA/DCGM/issues/144: 'dcgmi profile -l -i 7', '| A.1 | 1002 | sm_active |' ... 'fp16_active'
    rig = _read(CORPUS / "s29-dcgm" / "dcgmi-profile-l-a10-metric-groups-cut_xuchenhui-5.txt")
    assert rig.gpus == []
    assert any("sm_active" in p and "nothing judged" in p for p in rig.problems)


def test_another_dcgmi_profile_list_with_nvlink_fields():
    # https://github.com/NVIDIA/dcgm-exporter/issues/316: 'dcgmi profile -l -i 0', A.0 rows 1001 gr_engine_active to
    # 1012 nvlink_rx_bytes (then 1013 tensor_imma_active; the thread: NVLink metrics missing from the exporter)
    tags = ["gr_engine_active", "sm_active", "sm_occupancy", "tensor_active", "dram_active", "fp64_active"]
    tags += ["fp32_active", "fp16_active", "pcie_tx_bytes", "pcie_rx_bytes", "nvlink_tx_bytes", "nvlink_rx_bytes"]
    rule = "+----------------+----------+------------------------------------------------------+\n"
    text = (
        "dcgmi profile -l -i 0\n" + rule + "| Group.Subgroup | Field ID | Field Tag"
        "                                            |\n"
        + rule
        + "".join(f"| A.0            | {1001 + k}     | {t:<52} |\n" for k, t in enumerate(tags))
        + rule
    )
    rig = import_texts([("profile.txt", text)])
    assert rig.gpus == []
    assert any("nvlink_rx_bytes" not in p and "and 4 more" in p for p in rig.problems)


# --- class 7: Folding@home's PCI listing (FAHClient --lspci) ---


def test_fahclient_lspci_reads_two_gpus_not_their_audio_functions():
    # https://github.com/FoldingAtHome/fah-issues/issues/1149: '0x10de:0x13c0:3:0:0:NVIDIA Corporation:' and
    # '0x10de:0x0fbb:3:0:1:NVIDIA Corporation:', twice: two GTX 980 (13c0) both listed at bus 3 slot 0 (the thread's
    # nvidia-smi shows them elsewhere), two HDMI audio functions
    rig = _read(CORPUS / "s29-lspci" / "fahclient-lspci-2x-gtx980-same-bus-3-0-0-with-hdmi-audio_jchodera.txt")
    assert [g.index for g in rig.gpus] == [0, 1]
    assert all(g.bus_id is None and "at 0000:03:00.0" in g.unavailable["bus_id"] for g in rig.gpus)
    assert all("0x13c0" in g.unavailable["name"] for g in rig.gpus)
    assert sum("0fbb" in p and "not read as a GPU" in p for p in rig.problems) == 2
