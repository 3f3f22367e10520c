"""Held-out set 31's reading classes (nvidia-smi's MIG devices table alone, a quoted lspci -nnk whose lines were
joined, /proc/driver/nvidia/version under lsmod, detectron2's collect_env in unclosed inline code, ComfyUI's system
info and start-up log, gpu_cc_tool's D-state warning), each on its s31 paste and another real public sample of the
same form.

Values are the pastes' own (quoted in each test), never this tool's output."""

from __future__ import annotations

from tests.test_s21_reading import CORPUS, _read

# --- class 1: nvidia-smi's 'MIG devices:' box pasted without the GPU table above it ---


def test_mig_devices_table_alone_names_gpus_1_and_2_with_mig_on():
    # https://github.com/XuehaiPan/nvitop/pull/8: '|  1    3   0   0  |  14366MiB / 19968MiB |', GI 5 and 6 on GPU 1,
    # then '|  2    3   0   0  |  15210MiB / 19968MiB |' (cut): MIG slices of GPUs 1 and 2, no GPU named otherwise
    rig = _read(CORPUS / "s31-smi" / "smi-mig-devices-table-only-gpu1-gpu2-20gb-instances-cut_lounicotra.txt")
    assert [(g.index, g.mig_mode, g.name, g.bus_id, g.memory_total_bytes) for g in rig.gpus] == [
        (1, True, None, None, None),
        (2, True, None, None, None),
    ]
    assert rig.partial_gpu_list
    note = next(p for p in rig.problems if "MIG devices:" in p)
    assert "GPU 1: GI 3 (19968 MiB), GI 5 (19968 MiB), GI 6 (19968 MiB)" in note


# https://github.com/seansiddens/mps-test/blob/1b6991a0e32c68952e3c8d7e77356535a96c612f/README.md ("Verify that the
# GIs and corresponding CIs are created"): '$ nvidia-smi' on an A100 in MIG mode printing only the MIG devices box and
# the Processes box, GPU 0's two 3g.20gb instances idle; cut to the two boxes (the README's mig -lgi above left out).
_ANOTHER_MIG_BOX = """\
+-----------------------------------------------------------------------------+
| MIG devices:                                                                |
+------------------+----------------------+-----------+-----------------------+
| GPU  GI  CI  MIG |         Memory-Usage |        Vol|         Shared        |
|      ID  ID  Dev |                      | SM     Unc| CE  ENC  DEC  OFA  JPG|
|                  |                      |        ECC|                       |
|==================+======================+===========+=======================|
|  0    1   0   0  |     11MiB / 20224MiB | 42      0 |  3   0    2    0    0 |
+------------------+----------------------+-----------+-----------------------+
|  0    2   0   1  |     11MiB / 20096MiB | 42      0 |  3   0    2    0    0 |
+------------------+----------------------+-----------+-----------------------+

+-----------------------------------------------------------------------------+
| Processes:                                                                  |
|  GPU   GI   CI        PID   Type   Process name                  GPU Memory |
|        ID   ID                                                   Usage      |
|=============================================================================|
|  No running processes found                                                 |
+-----------------------------------------------------------------------------+
"""


def test_another_mig_devices_box_names_gpu_0_with_two_instances():
    rig = _read("mig-notes.txt", _ANOTHER_MIG_BOX)
    assert [(g.index, g.mig_mode) for g in rig.gpus] == [(0, True)]
    assert any("GPU 0: GI 1 (20224 MiB), GI 2 (20096 MiB)" in p for p in rig.problems)


# --- class 2: lspci -nnk whose lines were joined (a device line starting inside a line) ---


def test_joined_lspci_nnk_reads_both_gpus():
    # https://github.com/dockur/windows/issues/22: '> lspci -nnk | grep -i -A 3 'VGA' 03:00.0 VGA compatible controller
    # [0300]: NVIDIA Corporation GA106 [GeForce RTX 3060] [10de:2503] ... Kernel modules: nvidia_drm, nvidia', its
    # audio 03:00.1, then '81:00.0 VGA ... GP104 [GeForce GTX 1080] [10de:1b80] ...', each device's lines on one line
    rig = _read(CORPUS / "s31-lspci" / "quoted-lspci-nnk-grep-A3-lines-joined-rtx3060-gtx1080-unraid_Steel-skull.txt")
    assert [(g.bus_id, g.name) for g in rig.gpus] == [
        ("0000:03:00.0", "NVIDIA GeForce RTX 3060"),
        ("0000:81:00.0", "NVIDIA GeForce GTX 1080"),
    ]


# https://github.com/vanities/GPU-Passthrough-Arch-Linux-to-Windows10/issues/6 (roomforyeesus, 2022-09-10): the paste's
# eight lines (an RTX 3080 at 3e:00.0, its audio at 3e:00.1, each with Subsystem and Kernel driver/modules lines)
# joined into one line, as a reply that lost its line breaks shows them.
_JOINED_3080 = (
    "3e:00.0 VGA compatible controller [0300]: NVIDIA Corporation GA102 [GeForce RTX 3080] [10de:2206] (rev a1) "
    "Subsystem: Gigabyte Technology Co., Ltd Device [1458:404b] Kernel driver in use: nvidia "
    "Kernel modules: nouveau, nvidia_drm, nvidia "
    "3e:00.1 Audio device [0403]: NVIDIA Corporation GA102 High Definition Audio Controller [10de:1aef] (rev a1) "
    "Subsystem: Gigabyte Technology Co., Ltd Device [1458:404b] Kernel driver in use: snd_hda_intel "
    "Kernel modules: snd_hda_intel\n"
)


def test_another_joined_lspci_nnk_keeps_the_gpu_apart_from_its_audio_function():
    rig = _read("lspci-nnk.txt", _JOINED_3080)
    assert [(g.bus_id, g.name, g.pcie.path[-1].device_id) for g in rig.gpus] == [
        ("0000:3e:00.0", "NVIDIA GeForce RTX 3080", "0x2206")
    ]


# --- class 3: /proc/driver/nvidia/version's NVRM line with its words apart by more than one space ---


def test_lsmod_then_proc_version_reads_the_open_module_515_57():
    # https://github.com/NVIDIA/open-gpu-kernel-modules/issues/326: 'lsmod | grep nvidia' (nvidia, nvidia_modeset,
    # nvidia_drm), then 'NVRM version:  NVIDIA UNIX Open Kernel Module for x86_64  515.57  Release Build Mi 20. Jul ...'
    # (two spaces after 'version:')
    rig = _read(
        CORPUS / "s31-lost-gpu" / "lsmod-nvidia-proc-driver-version-open-515-57-loaded-no-fault-cut_bahmanfarshbaf.txt"
    )
    assert rig.software.driver_version == "515.57"
    assert rig.gpus == []


def test_another_open_module_proc_version_reads_565_57_01():
    # https://github.com/nix-community/nixGL/issues/186: Ubuntu 24.04's nvidia-driver-565-open, 'cat
    # /proc/driver/nvidia/version' (single spaces after 'version:'; this thread is cited in test_import_versions too:
    # no uncited public paste with the wider spacing was found)
    text = (
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  565.57.01  Release Build  (dvs-builder@U16-A24-9-2)"
        "  Thu Oct 10 12:15:00 UTC 2024\n"
        "GCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)\n"
    )
    assert _read("version.txt", text).software.driver_version == "565.57.01"


# --- class 4: detectron2's collect_env: torch's CUDA build from the PyTorch row's +cuXYZ tag ---


def test_detectron2_inline_code_table_reads_torch_built_for_cuda_11_1():
    # https://github.com/JosephKJ/iOD/issues/7: '`-----  -----' (an unclosed inline-code span), 'PyTorch  1.9.0+cu111',
    # 'GPU 0,1,2,3  NVIDIA GeForce RTX 3090'
    rig = _read(
        CORPUS / "s31-collect-env" / "detectron2-collect-env-inline-code-4x-rtx3090-c-ext-failed-cut_yuandhu.txt"
    )
    sw = rig.software
    assert (sw.torch_version, sw.torch_cuda_version) == ("1.9.0+cu111", "11.1")
    assert [g.name for g in rig.gpus] == ["NVIDIA GeForce RTX 3090"] * 4


# https://github.com/facebookresearch/detectron2/issues/2913 (monacv): the table's rows from sys.platform to GPU 0, cut
# there.
_D2_TABLE = """\
----------------------  --------------------------------------------------------------------------
sys.platform            linux
Python                  3.8.5 (default, Jan 27 2021, 15:41:15) [GCC 9.3.0]
numpy                   1.19.5
detectron2              0.4 @/home/mona/venv/frank/lib/python3.8/site-packages/detectron2
Compiler                GCC 9.3
CUDA compiler           CUDA 10.1
detectron2 arch flags   7.5
DETECTRON2_ENV_MODULE   <not set>
PyTorch                 1.8.1+cu111 @/home/mona/venv/frank/lib/python3.8/site-packages/torch
PyTorch debug build     False
GPU available           True
GPU 0                   GeForce GTX 1650 Ti with Max-Q Design (arch=7.5)
"""
# https://github.com/facebookresearch/detectron2/issues/2211 (elijah0501): its rows from sys.platform to GPU 0, cut
# there: a PyTorch row without a +cu tag.
_D2_UNTAGGED = """\
----------------------  ------------------------------------------------------------------------------------------------
sys.platform            linux
Python                  3.8.5 (default, Sep  4 2020, 07:30:14) [GCC 7.3.0]
numpy                   1.19.2
detectron2              0.2.1 @/home/server702/Documents/DNN/lib/detectron2/detectron2
detectron2._C           failed to import. detectron2 is not built correctly
Compiler                c++ (Ubuntu 7.5.0-3ubuntu1~18.04) 7.5.0
CUDA compiler           Cuda compilation tools, release 10.1, V10.1.105
DETECTRON2_ENV_MODULE   <not set>
PyTorch                 1.6.0 @/home/server702/Documents/anaconda/envs/detectron/lib/python3.8/site-packages/torch
PyTorch debug build     False
GPU available           True
GPU 0                   Tesla P100-PCIE-16GB (arch=6.0)
"""


def test_another_detectron2_table_reads_torch_cuda_from_the_tag_and_none_without_one():
    rig = _read("collect_env.txt", _D2_TABLE)
    assert (rig.software.torch_version, rig.software.torch_cuda_version) == ("1.8.1+cu111", "11.1")
    assert [(g.index, g.name, g.compute_capability) for g in rig.gpus] == [
        (0, "GeForce GTX 1650 Ti with Max-Q Design", "7.5")
    ]
    rig = _read("collect_env.txt", _D2_UNTAGGED)
    assert (rig.software.torch_version, rig.software.torch_cuda_version) == ("1.6.0", None)
    assert "torch_cuda_version" in rig.software.unavailable


# --- class 5: ComfyUI's start-up log and its System Information report ---


def test_comfyui_startup_log_reads_the_rtx_4090_and_its_24564_mib():
    # https://github.com/Comfy-Org/ComfyUI/issues/8010: 'Total VRAM 24564 MB, total RAM 32694 MB', 'pytorch version:
    # 2.7.0+cu128', 'Device: cuda:0 NVIDIA GeForce RTX 4090 : native'
    rig = _read(
        CORPUS / "s31-collect-env" / "comfyui-startup-powershell-total-vram-24564mb-rtx4090-native-cut_plebghud.txt"
    )
    assert [(g.index, g.name, g.memory_total_bytes) for g in rig.gpus] == [(0, "NVIDIA GeForce RTX 4090", 24564 << 20)]
    assert (rig.software.torch_version, rig.software.torch_cuda_version) == ("2.7.0+cu128", "12.8")
    assert rig.partial_gpu_list


def test_comfyui_system_information_reads_the_rtx_5090_and_its_vram_total_bytes():
    # https://github.com/Comfy-Org/ComfyUI/issues/11186: '- **PyTorch Version:** 2.8.0+cu129', '- **Name:** cuda:0
    # NVIDIA GeForce RTX 5090 : cudaMallocAsync', '  - **VRAM Total:** 34190458880'
    rig = _read(CORPUS / "s31-collect-env" / "comfyui-system-info-rtx5090-vram-total-bytes-logs-cut_Wapwray.txt")
    assert [(g.index, g.name, g.memory_total_bytes) for g in rig.gpus] == [(0, "NVIDIA GeForce RTX 5090", 34190458880)]
    assert (rig.software.torch_version, rig.software.torch_cuda_version) == ("2.8.0+cu129", "12.9")


# https://github.com/Comfy-Org/ComfyUI/issues/5278 (yankilong): the report's system information and devices, then its
# log's first four lines (logging's '2024-10-19 01:10:47,703 - root - INFO - ' prefix), cut there.
_COMFY_5278 = """\
## System Information
- **ComfyUI Version:** v0.2.3-18-g518c0dc
- **Arguments:** ComfyUI\\main.py --windows-standalone-build
- **OS:** nt
- **Python Version:** 3.11.9 (tags/v3.11.9:de54cf5, Apr  2 2024, 10:12:12) [MSC v.1938 64 bit (AMD64)]
- **Embedded Python:** true
- **PyTorch Version:** 2.4.1+cu124
## Devices

- **Name:** cuda:0 NVIDIA GeForce RTX 2060 : cudaMallocAsync
  - **Type:** cuda
  - **VRAM Total:** 12884443136
  - **VRAM Free:** 10727621930
  - **Torch VRAM Total:** 1174405120
  - **Torch VRAM Free:** 192578858

## Logs
```
2024-10-19 01:10:47,703 - root - INFO - Total VRAM 12288 MB, total RAM 32694 MB
2024-10-19 01:10:47,703 - root - INFO - pytorch version: 2.4.1+cu124
2024-10-19 01:10:47,712 - root - INFO - Set vram state to: NORMAL_VRAM
2024-10-19 01:10:47,712 - root - INFO - Device: cuda:0 NVIDIA GeForce RTX 2060 : cudaMallocAsync
```
"""


def test_another_comfyui_report_keeps_the_exact_bytes_and_one_gpu():
    rig = _read("comfyui-report.md", _COMFY_5278)
    assert [(g.index, g.name, g.memory_total_bytes) for g in rig.gpus] == [(0, "NVIDIA GeForce RTX 2060", 12884443136)]
    assert (rig.software.torch_version, rig.software.torch_cuda_version) == ("2.4.1+cu124", "12.4")


def test_another_comfyui_log_alone_reads_its_mib_with_the_logging_prefix():
    log = _COMFY_5278[_COMFY_5278.index("2024-10-19") : _COMFY_5278.rindex("```")]
    rig = _read("comfyui.log", log)
    assert [(g.index, g.name, g.memory_total_bytes) for g in rig.gpus] == [(0, "NVIDIA GeForce RTX 2060", 12288 << 20)]


def test_a_comfyui_log_embedded_in_another_app_reads_the_same():
    # https://github.com/robbyant-research/MagicQuill/issues/109: 'Total VRAM 8192 MB, total RAM 32689 MB', 'pytorch
    # version: 2.1.2+cu118', 'Set vram state to: NORMAL_VRAM', 'Device: cuda:0 NVIDIA GeForce RTX 2070 SUPER : native'
    log = (
        "Total VRAM 8192 MB, total RAM 32689 MB\npytorch version: 2.1.2+cu118\nSet vram state to: NORMAL_VRAM\n"
        "Device: cuda:0 NVIDIA GeForce RTX 2070 SUPER : native\nUsing pytorch cross attention\n"
    )
    rig = _read("magicquill.log", log)
    assert [(g.name, g.memory_total_bytes) for g in rig.gpus] == [("NVIDIA GeForce RTX 2070 SUPER", 8192 << 20)]
    assert rig.software.torch_cuda_version == "11.8"


# --- class 6: NVIDIA GPU Tools' log (gpu_cc_tool.py / nvidia_gpu_tools.py): its power-state warning ---


def test_gpu_cc_tool_d3hot_warning_is_a_note_not_a_lost_gpu():
    # https://github.com/NVIDIA/nvtrust/issues/33: 'NVIDIA GPU Tools version 535.86.06', '... WARNING  GPU
    # 0000:44:00.0 ? 0x2331 BAR0 0x50042000000 not in D0 (current state 3), forcing it to D0', then its CC settings
    rig = _read(
        CORPUS
        / "s31-lost-gpu"
        / "gpu-cc-tool-h100-44-00-0-bar0-not-in-d0-state-3-forcing-d0-cc-settings_seungsoo-lee.txt"
    )
    assert rig.gpus == []
    notes = [p for p in rig.problems if "NVIDIA GPU Tools WARNING" in p]
    assert len(notes) == 1
    assert "GPU 0000:44:00.0 was in PCI power state D3hot" in notes[0] and "not a lost one" in notes[0]


def test_another_gpu_tools_log_reads_its_power_control_warnings():
    # https://github.com/NVIDIA/gpu-admin-tools/issues/13 (juntaeklim): nvidia_gpu_tools.py v2025.07.21o
    # --query-cc-mode on an H100 at 3a:00.0, cut after its last line
    text = """\
NVIDIA GPU Tools version v2025.07.21o
Command line arguments: ['/shared/gpu-admin-tools/nvidia_gpu_tools.py', '--gpu-bdf=3a:00.0', '--query-cc-mode']
2025-09-16,12:34:15.923 WARNING  GPU 0000:3a:00.0 ? 0x2321 BAR0 0x0 was in D0/control:auto, forced power control \
to on. New state D0
Topo:
  Intel root port 0000:37:01.0
   PciBridge 0000:38:00.0 c030:1000
    PciBridge 0000:39:00.0 c030:1000
     GPU 0000:3a:00.0 H100 0x2321 BAR0 0x7e042000000
2025-09-16,12:34:15.925 INFO     Selected GPU 0000:3a:00.0 H100 0x2321 BAR0 0x7e042000000
2025-09-16,12:34:15.925 INFO     GPU 0000:3a:00.0 H100 0x2321 BAR0 0x7e042000000 CC mode is off
2025-09-16,12:34:15.926 WARNING  GPU 0000:3a:00.0 H100 0x2321 BAR0 0x7e042000000 restoring power control to auto
"""
    rig = _read("gpu_tools.log", text)
    assert rig.gpus == []
    notes = [p for p in rig.problems if "NVIDIA GPU Tools WARNING" in p]
    assert [n.split(": line ")[1].split(":")[0] for n in notes] == ["3", "11"]
    assert "was in PCI power state D0/control:auto" in notes[0]  # woken from runtime PM's auto, not from D3
