"""Held-out set 23's reading classes (GPU outputs), each on its s23 paste and another real public sample of the same
form.

Values are the pastes' own (quoted in each test), never this tool's output."""

from __future__ import annotations

from gpuadvisor.importers.launch_env import command_env
from gpuadvisor.importers.nccl_launch import launched_ranks
from gpuadvisor.rules import evaluate
from tests.test_s21_reading import CORPUS, TESTS, _read

# --- class 1: nccl-tests rows without banner or device lines under their command line ---


def test_rows_without_header_take_the_world_size_from_the_mpirun_line():
    # https://github.com/NVIDIA/nccl-tests/issues/232: 'mpirun ... -np 2 ./all_reduce_perf -b 2M -e 16G ... -g 1',
    # the column header, five rows 2-32 MiB (out-of-place busbw 41.31 at 33554432 B), cut in the 64 MiB row
    rig = _read(CORPUS / "s23-nccl-tests" / "all-reduce-tree-2-ranks-2-nodes-4-nics-no-devices-cut-at-64m_prohuper.txt")
    [m] = rig.measurements
    assert (m.kind, m.world_size, m.value_gbps) == ("all_reduce", 2, 41.31)
    assert [r.size_bytes for r in m.rows] == [2097152, 4194304, 8388608, 16777216, 33554432]


def test_launch_counts_processes_threads_and_gpus():
    # nccl-tests' README (https://github.com/NVIDIA/nccl-tests#usage): 'mpirun -np 10 ./build/all_reduce_perf -b 8
    # -e 128M -f 2 -g 4' runs "10 processes ... with 4 GPUs each, for a total of 40 GPUs"
    assert launched_ranks("$ mpirun -np 10 ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 4") == 40
    # https://github.com/NVIDIA/nccl-tests/issues/27: two nodes of two GPUs each
    assert (
        launched_ranks("mpirun -H 10.251.154.148,10.251.154.143 -np 2 ./all_reduce_perf -b 8 -e 128M -f 128 -g 2") == 4
    )
    # https://github.com/NVIDIA/nccl/issues/1530: one process, '-g 8'
    assert launched_ranks("NCCL_ALGO=TREE ./all_reduce_perf -g 8 -b 8 -e 128M -f 2") == 8
    # https://github.com/nebius/soperator/pull/428: srun with --nodes and --ntasks-per-node only: not counted here
    assert (
        launched_ranks(
            "srun --exclusive --mem=0 --nodes=2 --ntasks-per-node=8 --gpus-per-node=8 --mpi=pmix "
            "all_reduce_perf_mpi -b 512M -e 8G -f 2 -g 1"
        )
        is None
    )
    # a file named after the binary is not its command line
    assert launched_ranks("all_reduce_perf.txt") is None
    # a hostfile alone (https://github.com/NVIDIA/nccl-tests/issues/232's form without -np): the count is not shown
    assert launched_ranks("mpirun --hostfile hosts.txt ./all_reduce_perf -b 2M -g 1") is None


# --- class 2: NCCL variables set on the launch command line above an output ---


def test_mpirun_x_nccl_p2p_disable_is_judged():
    # https://github.com/NVIDIA/nccl-tests/issues/209: 'mpirun ... -x NCCL_IB_HCA==mlx5_bond_0 -x NCCL_P2P_DISABLE=1
    # -x NCCL_SHM_DISABLE=1 .../alltoall_perf', then the banner and two NVIDIA A100-SXM4-80GB per host
    rig = _read(
        CORPUS / "s23-nccl-tests" / "alltoall-cmd-p2p-shm-disabled-bond-roce-4-ranks-2-hosts-header-only_fj1425fj.txt"
    )
    env = rig.software.env
    assert (env["NCCL_P2P_DISABLE"], env["NCCL_SHM_DISABLE"], env["NCCL_IB_HCA"]) == ("1", "1", "=mlx5_bond_0")
    assert "LD_LIBRARY_PATH" not in env and "UCX_IB_GID_INDEX" not in env  # NCCL's variables only
    assert rig.origins["software.env"].startswith("alltoall-cmd-p2p-shm-disabled-bond-roce")
    assert "GA503" in {f.code for f in evaluate(rig)}


_P2P_OFF_PREFIX = """\
```
$ NCCL_DEBUG=INFO NCCL_P2P_DISABLE=1 ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 2

# nThread 1 nGpus 2 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 \
validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid   8756 on     Meowth device  0 [0x01] NVIDIA GeForce GTX 1050 Ti
#  Rank  1 Group  0 Pid   8756 on     Meowth device  1 [0x03] NVIDIA GeForce GTX 950
Meowth:8756:8756 [0] NCCL INFO Bootstrap : Using eth0:192.168.0.183<0>
"""


def test_assignments_before_the_command_are_its_environment():
    # https://github.com/NVIDIA/nccl-tests/issues/131: '$ NCCL_DEBUG=INFO NCCL_P2P_DISABLE=1 ./build/all_reduce_perf
    # -b 8 -e 128M -f 2 -g 2' above the banner (a GTX 1050 Ti and a GTX 950)
    rig = _read("paste.txt", _P2P_OFF_PREFIX)
    assert (rig.software.env["NCCL_P2P_DISABLE"], rig.software.env["NCCL_DEBUG"]) == ("1", "INFO")
    assert [g.name for g in rig.gpus] == ["NVIDIA GeForce GTX 1050 Ti", "NVIDIA GeForce GTX 950"]


def test_command_env_reads_command_lines_never_prose():
    # https://github.com/NVIDIA/nccl/issues/428: a root prompt '# NCCL_P2P_DISABLE=1 NCCL_DEBUG=INFO
    # LD_LIBRARY_PATH=... CUDA_VISIBLE_DEVICES=1,2  ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 2'
    env = command_env(
        [
            "# NCCL_P2P_DISABLE=1 NCCL_DEBUG=INFO LD_LIBRARY_PATH=/usr/local/lib:/usr/local/cuda/lib64 "
            "CUDA_VISIBLE_DEVICES=1,2  ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 2",
            "I tried NCCL_P2P_LEVEL=LOC too, same result",  # prose: not a command line
            "NCCL_ALGO=Ring",  # an assignment alone (an env listing), not a command
            "export NCCL_IB_DISABLE=1",
            "mpiexec -genv NCCL_SOCKET_IFNAME eth0 -n 2 \\",
            "    ./all_reduce_perf -g 1",
        ],
        10,
    )
    assert env == {
        "NCCL_P2P_DISABLE": ("1", 10),
        "NCCL_DEBUG": ("INFO", 10),
        "NCCL_IB_DISABLE": ("1", 13),
        "NCCL_SOCKET_IFNAME": ("eth0", 14),
    }


# --- class 3: DIGITS' device_query.py and cuda_memtest's log ---


def test_digits_device_query_lists_two_titan_z_dies_and_a_k40c():
    # https://github.com/NVIDIA/DIGITS/pull/497: Device #0 and #1 'GeForce GTX TITAN Z' (totalGlobalMem 6432907264,
    # 6442254336), Device #2 'Tesla K40c' (12079136768), each 'major 3', 'minor 5'; cut in Device #2's NVML rows
    rig = _read(CORPUS / "s23-collect-env" / "digits-device-query-py-2x-titan-z-dies-and-k40c-mixed-cut_lukeyeager.txt")
    assert [(g.index, g.name, g.memory_total_bytes, g.compute_capability) for g in rig.gpus] == [
        (0, "GeForce GTX TITAN Z", 6432907264, "3.5"),
        (1, "GeForce GTX TITAN Z", 6442254336, "3.5"),
        (2, "Tesla K40c", 12079136768, "3.5"),
    ]
    assert "GA301" in {f.code for f in evaluate(rig) if f.severity == "warn"}


_DIGITS_DOC = """\
```sh
$ digits/device_query.py
Device #0:
>>> CUDA attributes:
  name                         Tesla K40c
  totalGlobalMem               12079136768
  clockRate                    745000
  major                        3
  minor                        5
>>> NVML attributes:
  Total memory                 11519 MB
  Used memory                  23 MB
  Memory utilization           0%
  GPU utilization              0%
  Temperature                  30 C
```
"""


def test_digits_device_query_of_its_install_guide():
    # https://github.com/NVIDIA/DIGITS/blob/master/docs/InstallCuda.md: 'You can also use the DIGITS
    # `device_query` tool to check for the compute `major` and `minor` versions', one Tesla K40c
    rig = _read("InstallCuda.md", _DIGITS_DOC)
    [g] = rig.gpus
    assert (g.name, g.memory_total_bytes, g.compute_capability, g.bus_id) == ("Tesla K40c", 12079136768, "3.5", None)


def test_cuda_memtest_log_behind_its_prefix():
    # https://github.com/ComputationalRadiationPhysics/cuda_memtest/issues/52: 'NVRM version: NVIDIA UNIX Open
    # Kernel Module for x86_64  570.124.06', 'Device name=NVIDIA RTX PRO 6000 Blackwell Workstation Edition, global
    # memory size=101983125504', 'Allocated 4222 MB', Test0-Test2 finished, cut in Test3's line
    rig = _read(
        CORPUS / "s23-cuda-samples" / "cuda-memtest-1.2.3-rtx-pro-6000-blackwell-open-570-4gb-free-cut_createthis.txt"
    )
    assert rig.software.driver_version == "570.124.06"
    assert [(g.name, g.memory_total_bytes) for g in rig.gpus] == [
        ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 101983125504)
    ]
    assert any("Test0, Test1, Test2 finished; 0 memory errors" in p for p in rig.problems)
    assert any("tests 4222 MB of GPU 0's 97258 MiB" in p for p in rig.problems)


_MEMTEST_1050TI = """\
$ ./cuda_memtest --device 1
[02/14/2021 21:21:22][clay--games][0]:Running cuda memtest, version 1.2.3
[02/14/2021 21:21:23][clay--games][0]:NVRM version: NVIDIA UNIX x86_64 Kernel Module  460.32.03  Sun Dec 27 19:00:34 UTC 2020
[02/14/2021 21:21:23][clay--games][0]:num_gpus=1
[02/14/2021 21:21:23][clay--games][1]:Device name=GeForce GTX 1050 Ti, global memory size=4233035776, serial=unknown (no NVML found)
[02/14/2021 21:21:23][clay--games][1]:major=6, minor=1
[02/14/2021 21:21:23][clay--games][1]:Attached to device 1 successfully.
[02/14/2021 21:21:23][clay--games][1]:Allocated 3637 MB
[02/14/2021 21:21:23][clay--games][1]:Test0 [Walking 1 bit]
[02/14/2021 21:21:24][clay--games][1]:Test0 finished in 1.5 seconds
"""  # noqa: E501


def test_cuda_memtest_on_device_1():
    # https://github.com/pytorch/pytorch/issues/52019: '$ ./cuda_memtest --device 1' on a GTX 1050 Ti (driver
    # 460.32.03, 4233035776 bytes, 'major=6, minor=1'), the main thread's lines tagged [0], the device's [1]
    rig = _read("memtest.txt", _MEMTEST_1050TI)
    assert rig.software.driver_version == "460.32.03"
    assert [(g.index, g.name, g.memory_total_bytes, g.compute_capability) for g in rig.gpus] == [
        (1, "GeForce GTX 1050 Ti", 4233035776, "6.1")
    ]


# --- class 4: the GPGPU course's libgpu device list ---


def test_libgpu_list_reads_the_cuda_device_only():
    # https://github.com/GPGPUCourse/GPGPUTasks2026/pull/124: Device #0 'API: OpenCL. GPU. Intel(R) UHD Graphics',
    # Device #1 'API: CUDA+OpenCL+Vulkan. GPU. NVIDIA GeForce RTX 3050 (CUDA 13040). Free memory: 5166/6143 Mb.',
    # Device #2 'API: OpenCL. CPU. 13th Gen Intel(R) Core(TM) i5-13420H'
    rig = _read(
        CORPUS / "s23-collect-env" / "gpgpu-course-device-list-uhd-igpu-rtx3050-laptop-cpu-russian-pr_achvanov7.txt"
    )
    assert [(g.name, g.memory_total_bytes) for g in rig.gpus] == [("NVIDIA GeForce RTX 3050", 6143 * 2**20)]
    assert rig.software.driver_version is None  # 'CUDA 13040' is a CUDA level, not the driver's version
    assert any("#0 Intel(R) UHD Graphics (OpenCL, GPU)" in p for p in rig.problems)


_RTX4090_TWICE = """\
<pre>
Found 4 GPUs in 0.199479 sec (CUDA: 0.113645 sec, OpenCL: 0.035546 sec, Vulkan: 0.050236 sec)
Available devices:
  Device #0: API: OpenCL. CPU. 12th Gen Intel(R) Core(TM) i5-12600KF. Intel(R) Corporation. Total memory: 23839 Mb.
  Device #1: API: CUDA+OpenCL+Vulkan. GPU. NVIDIA GeForce RTX 4090 (CUDA 13000). Free memory: 22137/24047 Mb.
  Device #2: API: Vulkan. GPU. NVIDIA GeForce RTX 4090. Nvidia Corporation. Free memory: 22528/24564 Mb.
  Device #3: API: Vulkan. CPU. llvmpipe (LLVM 20.1.2, 256 bits). Free memory: 23839/23839 Mb.
Using device #1: API: CUDA+OpenCL+Vulkan. GPU. NVIDIA GeForce RTX 4090 (CUDA 13000). Free memory: 22137/24047 Mb.
Using CUDA API...
</pre>
"""


def test_libgpu_list_does_not_count_a_vulkan_only_twin():
    # https://github.com/GPGPUCourse/GPGPUTasks2025/pull/262: the RTX 4090 listed by CUDA (24047 Mb) and again by
    # Vulkan alone (24564 Mb): one GPU, the one CUDA reaches
    rig = _read("pr262.txt", _RTX4090_TWICE)
    assert [(g.name, g.memory_total_bytes) for g in rig.gpus] == [("NVIDIA GeForce RTX 4090", 24047 * 2**20)]


# --- class 5: the tail of one GPU's -q record above a whole record ---


def test_q_tail_above_a_whole_record_is_a_gpu_of_unknown_identity():
    # https://github.com/NVIDIA/dcgm-exporter/issues/16: Clocks lines, 'Max Customer Boost Clocks', 'Clock Policy',
    # 'Processes : None' (the end of one GPU's record), then 'GPU 00000000:41:00.0' 'Tesla P100-PCIE-16GB',
    # 'Persistence Mode : Disabled'
    rig = _read(CORPUS / "s23-smi-q" / "q-tail-of-one-gpu-then-p100-pcie-41-persistence-off-cut_guleng.txt")
    assert [(g.name, g.bus_id) for g in rig.gpus] == [(None, None), ("Tesla P100-PCIE-16GB", "0000:41:00.0")]
    assert "inside one GPU's record" in rig.gpus[0].unavailable["name"]
    assert "GA313" in {f.code for f in evaluate(rig) if f.severity == "warn"}


def test_q_paste_cut_inside_the_first_of_ten_records():
    # github.com/thamada/nvidia-smi gls/A40x10_smi.py (the capture of tests/fixtures/import/samples/
    # smi-q_a40x10_thamada.txt), pasted from GPU 00000000:4F:00.0's 'Max Clocks' down to the next record's head:
    # that GPU's tail, then 'GPU 00000000:52:00.0' 'NVIDIA A40'
    lines = (TESTS / "fixtures" / "import" / "samples" / "smi-q_a40x10_thamada.txt").read_text().splitlines()
    start = lines.index("    Max Clocks")
    end = lines.index("GPU 00000000:53:00.0")
    rig = _read("a40-tail.txt", "\n".join(lines[start:end]) + "\n")
    assert [(g.name, g.bus_id) for g in rig.gpus] == [(None, None), ("NVIDIA A40", "0000:52:00.0")]


# --- a topo -m whose last rows (or a row's NIC cells) are cut: the rows shown keep their NICs ---------------------


def test_a_cut_row_leaves_the_other_rows_nics_judged():
    """8x H100 (s23-topo, https://github.com/NVIDIA/nccl/issues/1357): GPU7's row is cut inside its
    cells; GPU1, GPU3 and GPU5 are SYS to every NIC shown whole, so GA805 warns on exactly those three."""
    path = next((CORPUS / "s23-topo").glob("topo-m-8x-h100*.txt"))
    rig = _read(path)
    assert rig.topology.nic_matrix[7] == [""] * len(rig.topology.nics)  # not shown: never SYS, never PIX
    assert all(c for row in rig.topology.nic_matrix[:7] for c in row)
    assert "the other rows kept" in rig.topology.unavailable["nic_matrix"]
    got = sorted(g for f in evaluate(rig) if f.code == "GA805" for g in f.gpus)
    assert got == [1, 3, 5]


def test_rows_cut_off_whole_leave_the_rows_shown_with_their_nics():
    """8x B200 in vLLM's collect_env (https://github.com/vllm-project/vllm/issues/31594): rows GPU4-GPU7 are cut
    off; GPU0-GPU3 each have a NIC at PIX, so nothing warns, and the four missing rows are unknown, not far."""
    rig = _read(TESTS / "fixtures/import/samples/topo-m_8xb200-merged-header.txt")
    m = rig.topology.nic_matrix
    assert [row.index("PIX") for row in m[:4]] == [11, 10, 9, 8]
    assert m[4:] == [[""] * 13] * 4
    assert not [f for f in evaluate(rig) if f.code == "GA805"]
