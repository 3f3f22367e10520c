"""Held-out set 17's misreads in pastes, as classes (files in tests/corpus/s17-*, gathered and read by hand before the
tool ran on them; each case names its source thread), each also checked on another public sample of its format."""

from __future__ import annotations

from gpuadvisor.importers.beyond import smi_processes
from gpuadvisor.importers.merge import import_files, parse_text
from gpuadvisor.importers.values import mem_bytes
from tests.corpus_cases import corpus_file as _one
from tests.corpus_cases import warn_findings as _found

# https://github.com/XuehaiPan/nvitop/issues/152 (eyalroz): a 535-era Processes table, compute and graphics rows
_NVITOP_152 = """\
+---------------------------------------------------------------------------------------+
| Processes:                                                                            |
|  GPU   GI   CI        PID   Type   Process name                            GPU Memory |
|        ID   ID                                                             Usage      |
|=======================================================================================|
|    0   N/A  N/A     10734      C   ...-x86_64-Release/abcdefgh/foo_bar         160MiB |
|    0   N/A  N/A     58661      G   .../abcdefgh/123456/bin/abcde/bazbaz          3MiB |
|    1   N/A  N/A     10734      C   ...-x86_64-Release/abcdefgh/foo_bar         160MiB |
|    2   N/A  N/A     18243      G   /usr/bin/X                                   64MiB |
|    2   N/A  N/A     22720      G   /usr/bin/gnome-shell                         34MiB |
+---------------------------------------------------------------------------------------+
"""


def test_the_process_tables_type_is_read_and_display_processes_are_no_memory_held() -> None:
    procs = smi_processes(_NVITOP_152)
    assert procs is not None
    assert [(p.gpu_index, p.pid, p.kind, p.used_bytes) for p in procs] == [
        (0, 10734, "C", 160 * 2**20),
        (0, 58661, "G", 3 * 2**20),
        (1, 10734, "C", 160 * 2**20),
        (2, 18243, "G", 64 * 2**20),
        (2, 22720, "G", 34 * 2**20),
    ]
    # https://github.com/CFSworks/nvml_fix/issues/11: X, kwin_x11 and krunner ('G') hold 1341 MiB on the GTX 1070
    # that drives the display: the desktop's own use, not a job's leftover
    path = _one("s17-smi/smi-396-unfenced-*.txt")
    assert "GA811" not in {code for code, _sev, _subject in _found(path)}
    # nvidia-smi -q gives each process's Type too: nvidia_gpu_exporter's capture of a KDE desktop on an RTX 4080 SUPER
    # (https://github.com/utkuozdemir/nvidia_gpu_exporter/blob/e656cd81a180e7e0e7862b53c9acd4c2fb0f590b/internal/
    # captures/linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05.txt)
    procs = import_files([_one("captures/lx_rtx-4080-super__595.71.05.q.txt")]).node.gpu_processes
    assert procs is not None
    assert [(p.pid, p.kind, p.used_bytes) for p in procs[:3]] == [
        (2165, "C+G", 25 * 2**20),
        (2496, "G", 200 * 2**20),
        (2620, "G", 4 * 2**20),
    ]


# https://github.com/canonical/snapd/pull/14893 (jocado): the driver's file of an L4, tabs as the driver prints them
_SNAPD_14893 = (
    "Model: \t\t NVIDIA L4\nIRQ:   \t\t 16\nGPU UUID: \t GPU-3291dfa4-fcc4-0110-615b-c894a0d7c689\n"
    "Video BIOS: \t 95.04.65.00.13\nBus Type: \t PCIe\nDMA Size: \t 47 bits\nDMA Mask: \t 0x7fffffffffff\n"
    "Bus Location: \t 0000:70:00.0\nDevice Minor: \t 0\nGPU Excluded:\t No\n"
)


def test_the_drivers_proc_information_file_is_one_gpu_per_model_line() -> None:
    (part,) = parse_text(_SNAPD_14893, "information")
    assert [(g.index, g.name, g.bus_id, g.uuid) for g in part.rig.gpus] == [
        (0, "NVIDIA L4", "0000:70:00.0", "GPU-3291dfa4-fcc4-0110-615b-c894a0d7c689")
    ]
    # https://landontclipp.github.io/sysadmin/gpu: after a cat prompt, long trailing spaces on several lines
    rig = import_files([_one("s17-smi/proc-driver-nvidia-gpus-information-*.txt")])
    assert [(g.name, g.bus_id, g.uuid) for g in rig.gpus] == [
        ("NVIDIA H100 80GB HBM3", "0000:62:00.0", "GPU-9221d5d1-b60b-a624-bf14-0a1819cfda3b")
    ]
    # two files at once (grep . /proc/driver/nvidia/gpus/*/information): each line after its file's path; the
    # second GPU excluded by the driver, its line cut inside the bus id
    two = "".join(f"/proc/driver/nvidia/gpus/0000:70:00.0/information:{x}\n" for x in _SNAPD_14893.splitlines())
    two += two.replace("0000:70:00.0", "0000:71:00.0").replace("Excluded:\t No", "Excluded:\t Yes")
    (part,) = parse_text(two[: two.rindex("Bus Location") + 22], "information")
    assert [(g.index, g.bus_id) for g in part.rig.gpus] == [(0, "0000:70:00.0"), (1, None)]


# https://github.com/tinygrad/open-gpu-kernel-modules/pull/22 (mylesgoose): simpleP2P (CUDA 12 samples, no per-GPU
# capability lines) on seven RTX 4090 with the P2P driver, the first twelve of its 42 pairs as the comment shows them
_TINYGRAD_22 = "\n".join(
    [
        "'/home/myles/cuda-samples/Samples/0_Introduction/simpleP2P/simpleP2P' ",
        "[/home/myles/cuda-samples/Samples/0_Introduction/simpleP2P/simpleP2P] - Starting...",
        "Checking for multiple GPUs...",
        "CUDA-capable device count: 7",
        "",
        "Checking GPU(s) for support of peer to peer memory access...",
        *(
            f"> Peer access from NVIDIA GeForce RTX 4090 (GPU{a}) -> NVIDIA GeForce RTX 4090 (GPU{b}) : Yes"
            for a in (0, 1)
            for b in range(7)
            if a != b
        ),
    ]
)


def test_simple_p2ps_peer_access_lines_are_the_pairs_p2p_capability() -> None:
    (part,) = parse_text(_TINYGRAD_22[: _TINYGRAD_22.rindex(" : Yes") + 6], "simpleP2P.txt")
    assert part.kind == "cuda-simplep2p"
    assert [g.name for g in part.rig.gpus] == ["NVIDIA GeForce RTX 4090"] * 7
    read = part.rig.topology.p2p_read
    assert read is not None and read[0] == ["X", "OK", "OK", "OK", "OK", "OK", "OK"]
    assert read[1] == ["OK", "X", "OK", "OK", "OK", "OK", "OK"] and read[2] == ["U", "U", "X", "U", "U", "U", "U"]
    # https://github.com/tensorflow/tensorflow/issues/2145: four K40m, '> GPU0 = "     Tesla K40m" IS  capable' lines
    # (the name printed %15s), P2P only within 0-1 and 2-3, the paste cut inside the 11th pair's line
    path = _one("s17-cuda-samples/simplep2p-*.txt")
    rig = import_files([path])
    assert [g.name for g in rig.gpus] == ["Tesla K40m"] * 4
    assert rig.topology.p2p_read == [
        ["X", "OK", "NS", "NS"],
        ["OK", "X", "NS", "NS"],
        ["NS", "NS", "X", "OK"],
        ["NS", "U", "U", "X"],
    ]
    assert _found(path) == [("GA206", "warn", "GPUs 0, 1, 2, 3")]


# https://github.com/numba/numba/pull/7221 (gmarkall): cuda.detect() once it printed the UUIDs
_NUMBA_7221 = """\
$ python -c "from numba import cuda; cuda.detect()"
Found 2 CUDA devices
id 0      b'Quadro RTX 8000'                              [SUPPORTED]
                      Compute Capability: 7.5
                           PCI Device ID: 0
                              PCI Bus ID: 21
                                    UUID: GPU-e6489c45-5b68-3b03-bab7-0e7c8e809643
                                Watchdog: Enabled
             FP32/FP64 Performance Ratio: 32
id 1      b'Quadro RTX 8000'                              [SUPPORTED]
                      Compute Capability: 7.5
                           PCI Device ID: 0
                              PCI Bus ID: 45
                                    UUID: GPU-499943e5-f155-f631-f44c-a61ca5995fd2
                                Watchdog: Disabled
             FP32/FP64 Performance Ratio: 32
Summary:
\t2/2 devices are supported
"""


def test_numbas_cuda_detect_names_each_device_and_its_compute_capability() -> None:
    (part,) = parse_text(_NUMBA_7221, "detect.txt")
    assert part.kind == "numba-detect"
    assert [(g.index, g.name, g.compute_capability, g.uuid, g.bus_id) for g in part.rig.gpus] == [
        (0, "Quadro RTX 8000", "7.5", "GPU-e6489c45-5b68-3b03-bab7-0e7c8e809643", None),
        (1, "Quadro RTX 8000", "7.5", "GPU-499943e5-f155-f631-f44c-a61ca5995fd2", None),
    ]  # 'PCI Bus ID: 21' is the bus number alone, in decimal: no bus id
    # cut after the first device's name line: the second is counted, not shown
    (part,) = parse_text(_NUMBA_7221[: _NUMBA_7221.index("id 1")], "detect.txt")
    assert [(g.index, g.name) for g in part.rig.gpus] == [(0, "Quadro RTX 8000"), (1, None)]
    # https://github.com/numba/numba/pull/6809: the same machine before the UUIDs, on a newer driver's names
    rig = import_files([_one("s17-collect-env/numba-cuda-detect-*.txt")])
    assert [(g.name, g.compute_capability) for g in rig.gpus] == [("NVIDIA Quadro RTX 8000", "7.5")] * 2


# https://github.com/NVIDIA/nvidia-docker/issues/1663 (HYL-Dave): the Processes section of an -q paste, taken alone
_NVIDIA_DOCKER_1663 = """\
    Processes
        GPU instance ID                   : N/A
        Compute instance ID               : N/A
        Process ID                        : 1667
            Type                          : G
            Name                          : /usr/lib/xorg/Xorg
            Used GPU Memory               : 141 MiB
        GPU instance ID                   : N/A
        Compute instance ID               : N/A
        Process ID                        : 2386
            Type                          : G
            Name                          : /usr/bin/gnome-shell
            Used GPU Memory               :"""
# https://github.com/influxdata/telegraf/issues/15279 (justinsteven): lines of an -q -x paste from <fan_speed> on,
# without the root or the <gpu> element, cut inside the last throttle reason
_TELEGRAF_15279 = """\
                <fan_speed>0 %</fan_speed>
                <performance_state>P8</performance_state>
                <clocks_throttle_reasons>
                        <clocks_throttle_reason_gpu_idle>Active</clocks_throttle_reason_gpu_idle>
                        <clocks_throttle_reason_applications_clocks_setting>Not Active\
</clocks_throttle_reason_applications_clocks_setting>
                        <clocks_throttle_reason_sw_power_cap>Not Active</clocks_throttle_reason_sw_power_cap>
                        <clocks_throttle_reason_hw_slowdown>Not Active</clocks_throttle_reason_hw_slowdown>
                        <clocks_throttle_reason_display_clocks_setting>Not"""


def test_smi_q_fragments_with_no_gpu_line_are_read_as_what_they_show() -> None:
    (part,) = parse_text(_NVIDIA_DOCKER_1663, "q.txt")
    assert (part.kind, part.rig.gpus) == ("smi-q", [])
    assert any("Processes section alone: 2 process(es) (type G)" in p for p in part.rig.problems)
    (part,) = parse_text(_TELEGRAF_15279, "qx.txt")
    assert (part.kind, part.rig.gpus) == ("smi-xml", [])
    assert [p.rsplit("; ", 1)[-1] for p in part.rig.problems] == ["clocks event reasons active: gpu_idle"]
    # https://github.com/NVIDIA/nvidia-docker/issues/1458: four C+G WDDM processes, no GPU line: no GPU, no GA811
    # https://github.com/1Panel-dev/1Panel/issues/10990: clocks_event_reasons and counters, no root
    for pattern in ("s17-smi-q/smi-q-wsl2-*.txt", "s17-smi-q/smi-q-x-fragment-*.txt"):
        path = _one(pattern)
        assert import_files([path]).gpus == [] and _found(path) == []


# https://github.com/simoncblyth/env/blob/d6213f4f74100e6df787b5a4dd232830745cd77a/graphics/nvidia/nvidia.bash: a
# 2015 note's nvidia-smi 319.37 on two Tesla K20m (ECC on: 4799 MiB of the 5 GiB), memory labelled "MB"
_ENV_K20M = """\
    -bash-4.1$ nvidia-smi
    Wed Feb  4 15:11:29 2015
    +------------------------------------------------------+
    | NVIDIA-SMI 5.319.37   Driver Version: 319.37         |
    |-------------------------------+----------------------+----------------------+
    | GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
    | Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
    |===============================+======================+======================|
    |   0  Tesla K20m          Off  | 0000:03:00.0     Off |                    0 |
    | N/A   23C    P0    34W / 225W |       11MB /  4799MB |      0%      Default |
    +-------------------------------+----------------------+----------------------+
    |   1  Tesla K20m          Off  | 0000:84:00.0     Off |                    0 |
    | N/A   22C    P0    41W / 225W |       11MB /  4799MB |     77%      Default |
    +-------------------------------+----------------------+----------------------+
"""


def test_the_pre_r340_tables_mb_are_mib() -> None:
    (part,) = parse_text(_ENV_K20M, "smi.txt")
    rig = part.rig
    assert [(g.bus_id, g.memory_used_bytes, g.memory_total_bytes, g.power_limit_w) for g in rig.gpus] == [
        ("0000:03:00.0", 11 * 2**20, 4799 * 2**20, 225.0),
        ("0000:84:00.0", 11 * 2**20, 4799 * 2**20, 225.0),
    ]
    assert mem_bytes("4799 MB") == 4799 * 2**20  # -q of the same drivers: "Total : 4799 MB"
    # https://github.com/cBio/cbio-cluster/issues/39: 325.15, three GTX TITAN, "14MB /  6143MB" (6 GiB less 1 MiB)
    rig = import_files([_one("s17-smi/smi-325-*.txt")])
    assert [g.memory_total_bytes for g in rig.gpus] == [6143 * 2**20] * 3


# https://github.com/linux-nvme/nvme-cli/pull/519 (minwooim): nvme list of a QEMU drive, the classic columns
_NVME_519 = (
    "Node             SN                   Model                                    Namespace "
    "Usage                      Format           FW Rev  \n"
    "---------------- -------------------- ---------------------------------------- --------- "
    "-------------------------- ---------------- --------\n"
    "/dev/nvme0n1     foo                  QEMU NVMe Ctrl                           1         "
    "536.87  MB / 536.87  MB    512   B +  0 B   1.0     \n"
)


def _drives(text: str) -> list[tuple[str, str | None, int | None]]:
    (part,) = parse_text(text, "nvme.txt")
    return [(d.name, d.model, d.size_bytes) for d in part.rig.storage.paths[0].devices]


def test_nvme_list_without_its_ruler_and_one_namespace_listed_twice() -> None:
    assert _drives(_NVME_519) == [("nvme0n1", "QEMU NVMe Ctrl", 536870000)]
    # the same table pasted with a blank line where its ruler was: read by the rows' shape, the same drive
    ruler = _NVME_519.splitlines()[1]
    assert _drives(" >nvme list\n\n" + _NVME_519.replace(ruler, "")) == _drives(_NVME_519)
    # https://github.com/FOGProject/fos/issues/72: the same shape, its Namespace cell empty
    rig = import_files([_one("s17-storage/nvme-list-no-dash-rule-*.txt")])
    drives = [(d.name, d.model, d.size_bytes) for d in rig.storage.paths[0].devices]
    assert drives == [("nvme0n1", "KINGSTON SNV2S250G", 250060000000)]
    # https://github.com/linux-nvme/nvme-cli/issues/2028: -o json (its sizes negative: a 32-bit overflow, no size)
    # then the table: one drive, its size from the table
    rig = import_files([_one("s17-storage/nvme-list-json-negative-*.txt")])
    drives = [(d.name, d.model, d.size_bytes) for d in rig.storage.paths[0].devices]
    assert drives == [("nvme0n1", "INTEL SSDPE2KX080T8", 8000000000000)]


# https://github.com/NVIDIA/dcgm-exporter/blob/00d6d344ea4a39112b211b9ff5af3d97e0bb51c2/README.md: the quickstart's
# page (its "..." the README's own elisions)
_DCGM_README = """\
$ curl localhost:9400/metrics
# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).
# TYPE DCGM_FI_DEV_SM_CLOCK gauge
# HELP DCGM_FI_DEV_MEM_CLOCK Memory clock frequency (in MHz).
# TYPE DCGM_FI_DEV_MEM_CLOCK gauge
# HELP DCGM_FI_DEV_MEMORY_TEMP Memory temperature (in C).
# TYPE DCGM_FI_DEV_MEMORY_TEMP gauge
...
DCGM_FI_DEV_SM_CLOCK{gpu="0", UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"} 139
DCGM_FI_DEV_MEM_CLOCK{gpu="0", UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"} 405
DCGM_FI_DEV_MEMORY_TEMP{gpu="0", UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"} 9223372036854775794
...
"""


def test_a_dcgm_exporter_page_of_descriptions_alone_is_an_exporter_with_no_gpu_series() -> None:
    (part,) = parse_text(_DCGM_README, "metrics.txt")
    assert part.kind == "dcgm" and part.line == 2  # the page starts at its first description line
    assert [(g.index, g.uuid) for g in part.rig.gpus] == [(0, "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52")]
    described = "".join(_DCGM_README.splitlines(keepends=True)[:7])  # the page cut before its samples
    (part,) = parse_text(described, "metrics.txt")
    assert part.rig.gpus == [] and "describes 3 metric(s)" in part.rig.problems[0]
    # https://github.com/NVIDIA/dcgm-exporter/issues/222: 13 metrics described, no sample line (GKE time-sharing)
    path = _one("s17-dcgm/dcgm-exporter-gke-*.txt")
    rig = import_files([path])
    assert rig.gpus == [] and any("describes 13 metric(s)" in p for p in rig.problems)
