"""Version outputs bug-report templates ask for, read from real public pastes (each cited): nvidia-smi --version,
/proc/driver/nvidia/version, nvcc --version, and the driver's packages (dpkg -l, rpm -qa). None lists a GPU."""

from __future__ import annotations

import pytest

from gpuadvisor.errors import InputError
from gpuadvisor.facts import Rig
from gpuadvisor.importers import import_texts, parse_text
from gpuadvisor.importers.sections import split_sections


def _read(text: str, name: str = "paste.txt") -> Rig:
    return import_texts([(name, text)])


# https://github.com/google/gvisor/blob/master/test/gpu/smoke_test.go (TestCUDAVersion: a real nvidia-smi --version)
SMI_570 = """NVIDIA-SMI version  : 570.86.15
NVML version        : 570.86
DRIVER version      : 570.86.15
CUDA Version        : 12.8
"""
# a public README (ghcr.io/rkhashmani/stellaforge, "Run a stage-1-vmec-gpu container ..."), under its prompt
SMI_590 = """root@24982ece960b:/app# nvidia-smi --version
NVIDIA-SMI version  : 590.48.01
NVML version        : 590.48
DRIVER version      : 590.48.01
CUDA Version        : 13.1
"""
# https://github.com/nix-community/nixGL/issues/186 (the open modules' form)
PROC_OPEN = """NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  565.57.01  Release Build  (dvs-builder@U16-A24-9-2)  Thu Oct 10 12:15:00 UTC 2024
GCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)
"""  # noqa: E501
# https://github.com/dylanaraps/neofetch/issues/876 (the proprietary module's form)
PROC_384 = """$ cat /proc/driver/nvidia/version
NVRM version: NVIDIA UNIX x86_64 Kernel Module  384.98  Thu Oct 26 15:16:01 PDT 2017
GCC version:  gcc version 7.2.0 (Ubuntu 7.2.0-8ubuntu3) 
"""  # noqa: W291
# https://github.com/nix-community/nixGL/issues/139 (a Jetson Orin NX: aarch64, an L4T release number)
PROC_JETSON = """NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  35.3.1  Release Build  (buildbrain@mobile-u64-6289-d7000)  Sun Mar 19 08:09:33 PDT 2023
GCC version:  gcc version 9.3.0 (Buildroot 2020.08) 
"""  # noqa: E501, W291
# https://github.com/blade-build/blade-build/pull/931
NVCC_110 = """nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2020 NVIDIA Corporation
Built on Thu_Jun_11_22:26:38_PDT_2020
Cuda compilation tools, release 11.0, V11.0.194
Build cuda_11.0_bu.TC445_37.28540450_0
"""
# https://github.com/3dem/relion/issues/988 (quoted without nvcc's first lines)
NVCC_115 = """Built on Thu_Nov_18_09:45:30_PST_2021
Cuda compilation tools, release 11.5, V11.5.119
"""
# https://github.com/illinois-scicomp/machine-shop-maintenance/issues/70: the loaded module and the installed
# nvidia-smi package of two versions (nvidia-smi: "Failed to initialize NVML: Driver/library version mismatch")
MISMATCH = """kgk2@bock:~$ cat /proc/driver/nvidia/version 
NVRM version: NVIDIA UNIX x86_64 Kernel Module  520.56.06  Thu Oct  6 21:38:55 UTC 2022
GCC version:  gcc version 12.2.0 (Debian 12.2.0-14) 
kgk2@bock:~$ dpkg -l nvidia-smi
Desired=Unknown/Install/Remove/Purge/Hold
| Status=Not/Inst/Conf-files/Unpacked/halF-conf/Half-inst/trig-aWait/Trig-pend
|/ Err?=(none)/Reinst-required (Status,Err: uppercase=bad)
||/ Name           Version      Architecture Description
+++-==============-============-============-==================================
ii  nvidia-smi     525.85.12-1  amd64        NVIDIA System Management Interface
"""  # noqa: W291
# https://github.com/NVIDIA/nvidia-docker/issues/1451 (dpkg -l '*nvidia*', its first rows; "un": not installed)
DPKG_455 = """`un  nvidia-304                                                  <none>                             <none>                             (no description available)
un  nvidia-340                                                  <none>                             <none>                             (no description available)
ii  nvidia-compute-utils-455                                    455.23.05-0ubuntu1                 amd64                              NVIDIA compute utilities
ii  nvidia-container-runtime                                    3.4.0-1                            amd64                              NVIDIA container runtime
un  nvidia-container-runtime-hook                               <none>                             <none>                             (no description available)
"""  # noqa: E501
# https://github.com/negativo17/nvidia-driver/issues/171 (rpm -qa|grep nvidia|sort: one driver version)
RPM_570 = """# rpm -qa|grep nvidia|sort
akmod-nvidia-570.86.16-1.el8.x86_64
kmod-nvidia-4.18.0-553.el8_10-570.86.16-1.el8.x86_64
libnvidia-cfg-570.86.16-1.el8.x86_64
libnvidia-ml-570.86.16-1.el8.x86_64
nvidia-driver-570.86.16-1.el8.x86_64
nvidia-driver-cuda-570.86.16-1.el8.x86_64
nvidia-settings-570.86.16-1.el8.x86_64
pcp-pmda-nvidia-gpu-5.3.7-22.el8_10.x86_64
xorg-x11-nvidia-570.86.16-1.el8.x86_64
"""
# https://github.com/negativo17/nvidia-driver/issues/180 (packages of 575.64 and 575.64.03 at once)
RPM_TWO = """# rpm -qa|grep nvidia|grep -v pcp
nvidia-xconfig-575.64-1.el9.x86_64
kmod-nvidia-5.14.0-427.el9_4-575.64-1.el9.x86_64
kmod-nvidia-5.14.0-570.el9_6-575.64-1.el9.x86_64
libnvidia-ml-575.64.03-1.el9.x86_64
nvidia-driver-575.64.03-1.el9.x86_64
kmod-nvidia-5.14.0-570.el9_6-575.64.03-1.el9.x86_64
"""
# https://github.com/Frogging-Family/nvidia-all/pull/212 (nvidia-smi's table, its first GPU row)
TABLE_550 = """$ nvidia-smi
Wed Jan 24 15:18:40 2024       
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 550.40.07              Driver Version: 550.40.07      CUDA Version: 12.4     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA GeForce RTX 4070        Off |   00000000:2D:00.0  On |                  N/A |
|  0%   36C    P5             17W /  200W |     430MiB /  12282MiB |      1%      Default |
|                                         |                        |                  N/A |
+-----------------------------------------+------------------------+----------------------+
"""  # noqa: W291


@pytest.mark.parametrize(
    ("text", "driver", "nvml", "cuda"),
    [(SMI_570, "570.86.15", "570.86", "12.8"), (SMI_590, "590.48.01", "590.48", "13.1")],
)
def test_smi_version_reads_the_driver_nvml_and_cuda(text: str, driver: str, nvml: str, cuda: str) -> None:
    rig = _read(text)
    sw = rig.software
    assert (sw.driver_version, sw.nvml_version, sw.cuda_driver_version) == (driver, nvml, cuda)
    assert rig.gpus == []
    line = 3 if text.startswith("NVIDIA") else 4
    assert rig.origins["software.driver_version"].startswith(f"paste.txt:{line} (nvidia-smi --version)")


def test_smi_version_cut_inside_its_last_line_leaves_that_value_not_shown() -> None:
    text = "".join(SMI_570.splitlines(keepends=True)[:3]).rstrip("\n")
    cut = text.removesuffix(".15")  # "DRIVER version      : 570.86" ends the paste: a version, maybe cut short
    assert cut.endswith(": 570.86")
    rig = _read(cut)
    assert rig.software.driver_version is None
    assert "ends inside its line" in rig.software.unavailable["driver_version"]
    assert rig.software.nvml_version == "570.86"


def test_older_smi_version_without_cuda_line_leaves_cuda_not_shown() -> None:
    rig = _read("".join(SMI_570.splitlines(keepends=True)[:3]))
    assert rig.software.driver_version == "570.86.15"
    assert rig.software.cuda_driver_version is None
    assert "not shown" in rig.software.unavailable["cuda_driver_version"]


@pytest.mark.parametrize(
    ("text", "driver", "line"),
    [(PROC_OPEN, "565.57.01", 1), (PROC_384, "384.98", 2), (PROC_JETSON, "35.3.1", 1)],
)
def test_proc_version_reads_the_loaded_module(text: str, driver: str, line: int) -> None:
    rig = _read(text)
    assert rig.software.driver_version == driver
    assert rig.gpus == []
    assert rig.origins["software.driver_version"].startswith(f"paste.txt:{line} (/proc/driver/nvidia/version)")


def test_proc_version_cut_in_its_line_is_not_a_version() -> None:
    rig = _read("NVRM version: NVIDIA UNIX x86_64 Kernel Module  384.98")  # no newline: it may go on
    assert rig.software.driver_version is None
    assert "ends inside" in rig.software.unavailable["driver_version"]


@pytest.mark.parametrize(("text", "said"), [(NVCC_110, "11.0 (nvcc V11.0.194)"), (NVCC_115, "11.5 (nvcc V11.5.119)")])
def test_nvcc_records_the_toolkit_in_the_notes_and_no_driver_fact(text: str, said: str) -> None:
    rig = _read(text)
    (note,) = [p for p in rig.problems if "CUDA toolkit" in p]
    assert f"CUDA toolkit {said} installed" in note
    assert rig.software.driver_version is None and rig.software.cuda_driver_version is None
    assert [s.kind for s in split_sections(text)] == ["cuda-toolkit"]


def test_toolkit_version_files() -> None:
    # /usr/local/cuda/version.txt and version.json, as the CUDA 11.0 and 11.1+ toolkits write them
    txt = _read("CUDA Version 11.0.228\n")
    assert any("CUDA toolkit 11.0.228 (version.txt)" in p for p in txt.problems)
    # version.json's first objects as a public README quotes `cat /usr/local/cuda/version.json` (CUDA 11.8: its
    # SDK version carries the release date)
    js = '{\n   "cuda" : {\n      "name" : "CUDA SDK",\n      "version" : "11.8.20220929"\n   },\n'
    js += '   "cuda_gdb" : {\n      "name" : "CUDA GDB",\n      "version" : "11.8.86"\n   },\n'
    assert [s.kind for s in split_sections(js)] == ["cuda-toolkit"]
    (note,) = [p for p in _read(js).problems if "CUDA toolkit" in p]
    assert note.startswith("paste.txt: line 3: CUDA toolkit 11.8.20220929 (version.json) installed")


def test_packages_of_one_driver_version_give_it() -> None:
    rig = _read(RPM_570)
    assert rig.software.driver_version == "570.86.16"
    dpkg = _read(DPKG_455)
    assert dpkg.software.driver_version == "455.23.05"  # the container runtime's 3.4.0 is not the driver's
    assert dpkg.origins["software.driver_version"].startswith("paste.txt:3 ")


def test_packages_of_two_driver_versions_give_none_with_the_reason() -> None:
    rig = _read(RPM_TWO)
    assert rig.software.driver_version is None
    assert "packages of 2 driver versions installed" in rig.software.unavailable["driver_version"]
    (note,) = [p for p in rig.problems if "driver versions installed" in p]
    assert "575.64 (" in note and "575.64.03 (" in note and "version mismatch" in note


def test_installed_packages_newer_than_the_loaded_module_keep_the_loaded_and_say_so() -> None:
    rig = _read(MISMATCH)
    assert rig.software.driver_version == "520.56.06"
    assert rig.origins["software.driver_version"].startswith("paste.txt:2 (/proc/driver/nvidia/version)")
    (note,) = [p for p in rig.problems if "installed, driver" in p]
    assert "driver packages 525.85.12 installed, driver 520.56.06 loaded" in note


def test_with_an_smi_table_the_versions_agree_or_the_outputs_are_of_two_machines() -> None:
    smi = SMI_570.replace("570.86.15", "550.40.07").replace("570.86", "550.40").replace("12.8", "12.4")
    proc = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.40.07  Thu Jan 18 00:00:00 UTC 2024\n"
    text = TABLE_550 + "$ nvidia-smi --version\n" + smi + "$ cat /proc/driver/nvidia/version\n" + proc + NVCC_110
    assert [p.kind for p in parse_text(text, "s.txt")] == ["smi-summary", "smi-version", "proc-version", "cuda-toolkit"]
    rig = _read(text)
    assert [g.name for g in rig.gpus] == ["NVIDIA GeForce RTX 4070"]
    assert rig.software.driver_version == "550.40.07"
    other = TABLE_550 + "$ cat /proc/driver/nvidia/version\n" + PROC_OPEN
    with pytest.raises(InputError, match=r"outputs of different machines: .* driver 550.40.07, .* driver 565.57.01"):
        _read(other)
    with pytest.raises(InputError, match="outputs of different machines"):
        _read(TABLE_550 + SMI_570)


def test_text_that_only_looks_like_them_is_not_read() -> None:
    for text in ("CUDA Version: 12.4\n", "ii  vim  2:9.0-1  amd64  editor\n", "NVRM version: 535\n"):
        with pytest.raises(InputError, match="not recognised"):
            _read(text)


def test_an_smi_mismatch_message_stays_the_driver_s_reason_the_module_s_version_noted() -> None:
    # nvidia-smi's message (its fixed text) over the neofetch paste of /proc/driver/nvidia/version
    smi = "$ nvidia-smi\nFailed to initialize NVML: Driver/library version mismatch\nNVML library version: 390.30\n"
    rig = _read(smi + PROC_384)
    assert rig.software.driver_version is None
    assert rig.software.unavailable["driver_version"].startswith("Driver/library version mismatch")
    (note,) = [p for p in rig.problems if "driver 384.98" in p]
    assert "(/proc/driver/nvidia/version): driver 384.98, NVML's library 390.30" in note
