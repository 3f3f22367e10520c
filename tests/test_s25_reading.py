"""Held-out set 25's reading classes (environment reports, nvidia-smi tables, -q fragments), each on its s25 paste and
another real public sample of the same form.

Values are the pastes' own (quoted in each test), never this tool's output."""

from __future__ import annotations

import pytest

from gpuadvisor.importers import import_texts
from gpuadvisor.importers.errors import ImportParseError
from tests.test_s21_reading import CORPUS, _read

# --- class 1: OpenMMLab's collect_env report (lmdeploy check_env, SGLang check_env): 'Key: value' lines ---


def test_lmdeploy_check_env_reads_its_gpus_and_torch_build():
    # https://github.com/InternLM/lmdeploy/issues/4049: 'GPU 0,1: Tesla V100-SXM2-32GB', 'GPU 2: Tesla PG503-216',
    # 'GPU 3: NVIDIA GeForce RTX 2080 Ti', 'PyTorch: 2.8.0+cu128', 'Python: 3.10.18 (main, ...)'
    folder = CORPUS / "s25-collect-env"
    rig = _read(folder / "lmdeploy-check-env-mixed-v100-sxm2-pg503-2080ti-cu128-cut-in-build-settings_mewho163.txt")
    assert [g.name for g in rig.gpus] == [
        "Tesla V100-SXM2-32GB",
        "Tesla V100-SXM2-32GB",
        "Tesla PG503-216",
        "NVIDIA GeForce RTX 2080 Ti",
    ]
    sw = rig.software
    assert (sw.torch_version, sw.torch_cuda_version, sw.python_version) == ("2.8.0+cu128", "12.8", "3.10.18")
    assert sw.driver_version is None  # it prints none


def test_another_lmdeploy_check_env_from_its_command_line():
    # https://github.com/InternLM/lmdeploy/issues/3996 (its first lines): '$ lmdeploy check_env', Python 3.9.23,
    # 'GPU 0,1,2,3: NVIDIA GeForce RTX 3090', NVCC 11.0, 'PyTorch: 2.6.0+cu124', then its build details
    text = (
        "(lmdeploy) wangq-bj@BJ-G102-7911:~/wq/src/pipeline$ lmdeploy check_env\n"
        "sys.platform: linux\n"
        "Python: 3.9.23 (main, Jun  5 2025, 13:40:20) [GCC 11.2.0]\n"
        "CUDA available: True\n"
        "MUSA available: False\n"
        "numpy_random_seed: 2147483648\n"
        "GPU 0,1,2,3: NVIDIA GeForce RTX 3090\n"
        "CUDA_HOME: /usr/local/cuda\n"
        "NVCC: Cuda compilation tools, release 11.0, V11.0.194\n"
        "GCC: gcc (Ubuntu 9.4.0-1ubuntu1~20.04.2) 9.4.0\n"
        "PyTorch: 2.6.0+cu124\n"
        "PyTorch compiling details: PyTorch built with:\n"
        "  - GCC 9.3\n"
        "  - CUDA Runtime 12.4\n"
        "  - CuDNN 90.1\n"
    )
    rig = import_texts([("env.txt", text)])
    assert [(g.index, g.name) for g in rig.gpus] == [(i, "NVIDIA GeForce RTX 3090") for i in range(4)]
    assert (rig.software.torch_version, rig.software.torch_cuda_version) == ("2.6.0+cu124", "12.4")
    assert rig.software.python_version == "3.9.23"


def test_a_check_env_cut_after_its_pytorch_key_reads_no_torch():
    # https://github.com/InternLM/lmdeploy/issues/3057: an inline-code backtick opens 'Python: 3.9.0', tmux padding,
    # 'GPU 0,1,2,3: NVIDIA RTX A6000', cut at 'PyTorch:'
    folder = CORPUS / "s25-collect-env"
    rig = _read(folder / "lmdeploy-check-env-inline-code-tmux-padding-4x-rtx-a6000-cut-at-pytorch_lanbai-eleven.txt")
    assert [g.name for g in rig.gpus] == ["NVIDIA RTX A6000"] * 4
    assert rig.software.torch_version is None
    # the same report cut inside its version: not read
    rig = import_texts([("env.txt", "Python: 3.9.0\nCUDA available: True\nGPU 0: NVIDIA RTX A6000\nPyTorch: 2.1")])
    assert rig.software.torch_version is None


def test_sglang_check_env_reads_its_pytorch_line():
    # https://github.com/sgl-project/sglang/issues/11208: 'PyTorch: 2.8.0+cu129', 'CUDA Driver Version: 570.172.08'
    folder = CORPUS / "s25-collect-env"
    rig = _read(folder / "sglang-check-env-4x-gb200-570-topology-nv18-cut-in-gpu3-row_sam571128.txt")
    sw = rig.software
    assert (sw.torch_version, sw.torch_cuda_version, sw.driver_version) == ("2.8.0+cu129", "12.9", "570.172.08")
    assert [g.name for g in rig.gpus] == ["NVIDIA GB200"] * 4


# --- class 2: CuPy's show_config(): padded 'Key : value' lines, the driver's CUDA version as 1000 x major + 10 x minor


def test_cupy_show_config_reads_the_drivers_cuda_version():
    # https://github.com/cupy/cupy/issues/9723: 'CUDA Driver Version          : 13000' (CUDA 13.0), 'Python Version
    # : 3.10.12', no device lines (cut inside the cuBLAS ImportError)
    rig = _read(
        CORPUS
        / "s25-collect-env"
        / "cupy-show-config-cuda-driver-13000-runtime-12090-cublas-importerror-cut_leofang.txt"
    )
    assert rig.software.cuda_driver_version == "13.0"
    assert rig.software.python_version == "3.10.12"
    assert rig.gpus == []


# https://github.com/cupy/cupy/issues/5847 (its report from 'OS', some library lines left out; its 'Device 0 PCI Bus
# ID' line, whose value the thread's first lines do not show, left out)
CUPY_5847 = """OS                           : Linux-5.4.0-87-generic-x86_64-with-Ubuntu-18.04-bionic
Python Version               : 3.6.9
CuPy Version                 : 9.5.0
CuPy Platform                : NVIDIA CUDA
NumPy Version                : 1.19.5
CUDA Root                    : /usr
nvcc PATH                    : /usr/bin/nvcc
CUDA Build Version           : 11040
CUDA Driver Version          : 11040
CUDA Runtime Version         : 11040
cuBLAS Version               : (available)
cuSOLVER Version             : (11, 2, 0)
NCCL Build Version           : None
Device 0 Name                : NVIDIA TITAN V
Device 0 Compute Capability  : 70
"""


def test_cupy_show_config_reads_its_devices():
    rig = import_texts([("config.txt", CUPY_5847)])
    assert rig.software.cuda_driver_version == "11.4"
    assert [(g.index, g.name, g.compute_capability) for g in rig.gpus] == [(0, "NVIDIA TITAN V", "7.0")]


def test_cupy_show_config_of_a_rocm_build_is_refused():
    # https://github.com/cupy/cupy/pull/4108: CuPy 8.0.0rc1 on ROCm, 'CUDA Root : /opt/rocm', 'CUDA Driver Version :
    # 313700' (HIP's), 'Device 0 Name : Vega 20'
    with pytest.raises(ImportParseError):
        _read(CORPUS / "s25-not-read" / "cupy-show-config-rocm-vega20-cuda-root-opt-rocm-device-0_leofang.txt")


# --- class 3: nvidia-smi mig -lgi: the GPUs its GPU instances are on (MIG mode on), nothing else about them ---


def test_mig_lgi_names_the_gpus_its_instances_are_on():
    # https://github.com/NVIDIA/DCGM/issues/138: GPU 0 and GPU 1 with 1g.10gb (x2), 2g.20gb and 3g.40gb instances,
    # cut in GPU 2's first row ('|   2  MIG 1g.10gb')
    rig = _read(CORPUS / "s25-smi" / "smi-mig-lgi-gpu-instances-1g10gb-3g40gb-profiles-cut-at-gpu2_neggert.txt")
    assert [(g.index, g.mig_mode, g.name) for g in rig.gpus] == [(0, True, None), (1, True, None), (2, True, None)]
    assert rig.partial_gpu_list


# https://github.com/Summer-Lo/Docker_configuration/blob/4233c7bdcdc5eb24a64c8564d9ab4341ffd58360/000-MIG/README.md
# ('### Current status'): an A30's four 1g.6gb GPU instances
LGI_A30 = """+-------------------------------------------------------+
| GPU instances:                                        |
| GPU   Name             Profile  Instance   Placement  |
|                          ID       ID       Start:Size |
|=======================================================|
|   0  MIG 1g.6gb          14        3          0:1     |
+-------------------------------------------------------+
|   0  MIG 1g.6gb          14        4          1:1     |
+-------------------------------------------------------+
|   0  MIG 1g.6gb          14        5          2:1     |
+-------------------------------------------------------+
|   0  MIG 1g.6gb          14        6          3:1     |
+-------------------------------------------------------+
"""


def test_mig_lgi_of_one_gpu_with_four_instances_is_one_gpu():
    rig = import_texts([("mig.txt", "sudo nvidia-smi mig -lgi\n" + LGI_A30)])
    assert [(g.index, g.mig_mode) for g in rig.gpus] == [(0, True)]
    assert any("1g.6gb, 1g.6gb, 1g.6gb, 1g.6gb" in p for p in rig.problems)


# --- class 4: SkyPilot's log tag on every line ('(sky-cmd, pid=13008) ', Ray's prefix with the task's name) ---


def test_an_smi_table_with_skypilots_tag_on_every_line_reads():
    # https://github.com/skypilot-org/skypilot/pull/4099: '(sky-cmd, pid=13008) ' before each line of a 535 table:
    # driver 535.183.06, CUDA 12.2, GPU 0 an NVIDIA H100 80GB HBM3 at 00000000:04:00.0, 70W / 700W, 81559MiB
    rig = _read(CORPUS / "s25-smi" / "sky-cmd-prefixed-smi-535-h100-80gb-hbm3-mega-cut-after-first-gpu_michaelvll.txt")
    assert (rig.software.driver_version, rig.software.cuda_driver_version) == ("535.183.06", "12.2")
    g = rig.gpus[0]
    assert (g.name, g.bus_id, g.power_limit_w) == ("NVIDIA H100 80GB HBM3", "0000:04:00.0", 700.0)


def test_skypilots_task_and_node_tags_are_taken_off():
    from gpuadvisor.importers.prefixed import strip_prefix

    # https://github.com/skypilot-org/skypilot/issues/5399: 'sky jobs logs' of a pipeline, a setup line tagged
    # '(setup pid=1504) ', the run's '(train, pid=1504) '
    log = "(setup pid=1504) running setup for train\n(train, pid=1504) running commands for train\n"
    log += "(train, pid=1504) train done\n"
    assert strip_prefix(log) == (
        "running setup for train\nrunning commands for train\ntrain done\n",
        "Ray's worker prefix",
    )
    # https://github.com/skypilot-org/skypilot/pull/1380: a multi-node job's lines, '(node-2, head, rank=0,
    # pid=23862) 0' and '(node-0, worker1, rank=1, pid=22755, ip=172.31.81.91) 1'
    nodes = "(node-2, head, rank=0, pid=23862) 0\n(node-0, worker1, rank=1, pid=22755, ip=172.31.81.91) 1\n"
    nodes += "(node-1, worker3, rank=3, pid=22760, ip=172.31.89.126) 3\n"
    assert strip_prefix(nodes)[0] == "0\n1\n3\n"


# --- class 5: an nvidia-smi table whose GPU rows the poster cut out with '...': the rows below it are read ---


def test_a_table_cut_to_one_gpu_row_with_dots_reads_that_gpu():
    # https://github.com/Project-HAMi/HAMi/issues/409: the header's '|===' rule, '...', GPU 5 'NVIDIA A100-SXM4-80GB'
    # at 00000000:98:00.0, '93W / 400W', '871MiB / 81920MiB', then '...' again
    rig = _read(CORPUS / "s25-smi" / "smi-535-in-node-elided-rows-one-a100-sxm4-80gb-gpu5-e-process_jeonghyunkeem.txt")
    assert [(g.index, g.name, g.bus_id, g.power_limit_w) for g in rig.gpus] == [
        (5, "NVIDIA A100-SXM4-80GB", "0000:98:00.0", 400.0)
    ]
    assert rig.gpus[0].memory_total_bytes == 81920 * 2**20
    assert rig.partial_gpu_list  # GPUs 0-4 left out


def test_dots_above_a_memory_row_whose_first_row_was_cut_out():
    # https://github.com/NVIDIA/gdrcopy/issues/92: '...' under the banner, a GPU's second row alone, then GPU 7
    # 'Tesla M2070' at 00000000:33:00.0 whole: GPU 7 read, the list partial
    rig = _read(CORPUS / "s23-smi" / "smi-390-no-cuda-banner-elided-tesla-m2070-gpu7-only_wangzhezhe.txt")
    assert [(g.index, g.name, g.bus_id) for g in rig.gpus] == [(7, "Tesla M2070", "0000:33:00.0")]
    assert rig.partial_gpu_list


# --- class 6: the kernel log's module loading line names the driver that runs ---


def test_the_nvrm_loading_line_grepped_below_smi_l_gives_the_driver():
    # https://github.com/NVIDIA/gpu-operator/issues/442: 'nvidia-smi -L' (one A30), then 'sudo grep -i nvrm
    # /var/log/syslog': 'NVRM: loading NVIDIA UNIX x86_64 Kernel Module  515.65.01  Wed Jul 20 14:00:58 UTC 2022'
    rig = _read(CORPUS / "s25-smi" / "kubectl-exec-smi-L-one-a30-then-grep-nvrm-syslog-515-cut_esparig.txt")
    assert rig.software.driver_version == "515.65.01"
    assert rig.software.cuda_driver_version == "11.7"  # the 515 branch's CUDA (the CUDA 11.7 release notes)
    assert [g.name for g in rig.gpus] == ["NVIDIA A30"]


def test_the_open_modules_loading_line_gives_the_driver_too():
    # https://github.com/ublue-os/bazzite/issues/2612: a journal's 'NVRM: loading NVIDIA UNIX Open Kernel Module for
    # x86_64  570.133.07  Release Build ...'
    rig = _read(CORPUS / "s12-logs" / "journal-good-boot-amdgpu-igpu-nvidia-open-570-loads-no-fault-cut_sebmaster.txt")
    assert rig.software.driver_version == "570.133.07"
    # https://github.com/akash-network/support/issues/244: dmesg -T's '... Kernel Module  535.183.01  Sun May 12 ...'
    rig = _read(CORPUS / "s8-logs" / "dmesg-T-grep-nvrm-xid43-31-94-three-gpus-cut_andy108369.txt")
    assert rig.software.driver_version == "535.183.01"
    # a version the paste ends inside is not read
    cut = "[    5.1] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.18"
    assert (
        import_texts([("dmesg.txt", "[    5.0] nvidia: loading out-of-tree module\n" + cut)]).software.driver_version
        is None
    )


# --- class 7: an -q record cut inside its Power Readings: 'Enforced Power Limit' (older drivers) is the power limit ---


def test_a_tail_cut_below_its_power_limit_line_reads_the_enforced_limit():
    # https://github.com/4paradigm/k8s-vgpu-scheduler/issues/25: the first GPU's tail from 'Default Power Limit :
    # 250.00 W', 'Enforced Power Limit : 250.00 W', then its clocks; then 'GPU 00000000:83:00.0', a TITAN V
    rig = _read(
        CORPUS / "s25-smi-q" / "smi-q-fragment-power-clocks-tail-then-titan-v-83-00-header-cut_chenyangxuehdu.txt"
    )
    assert [(g.name, g.bus_id, g.power_limit_w) for g in rig.gpus] == [
        (None, None, 250.0),
        ("TITAN V", "0000:83:00.0", None),
    ]


# https://github.com/Xiamu-ssr/ASC22-ControlPower (README.md, its 'nvidia-smi -q' of an A100 80GB PCIe): the record
# from 'Default Power Limit' down, as a paste cut above it shows it
ASC22_TAIL = """        Default Power Limit               : 300.00 W
        Enforced Power Limit              : 300.00 W
        Min Power Limit                   : 150.00 W
        Max Power Limit                   : 300.00 W
    Clocks
        Graphics                          : 1410 MHz
        SM                                : 1410 MHz
        Memory                            : 1512 MHz
        Video                             : 1275 MHz
    Applications Clocks
        Graphics                          : 1410 MHz
        Memory                            : 1512 MHz
"""


def test_a_fragment_starting_inside_power_readings_reads_the_enforced_limit():
    rig = import_texts([("q.txt", ASC22_TAIL)])
    assert [g.power_limit_w for g in rig.gpus] == [300.0]
    # without its 'Enforced Power Limit' line, nothing of that section is read as the limit
    rig = import_texts([("q.txt", ASC22_TAIL.replace("        Enforced Power Limit              : 300.00 W\n", ""))])
    assert [g.power_limit_w for g in rig.gpus] == [None]
