"""Held-out set 23's reading classes (GPU outputs), each on its s23 paste and another real public sample of the same
form.

Values are the pastes' own (quoted in each test), never this tool's output."""

from __future__ import annotations

from gpuadvisor.importers.nccl_launch import launched_ranks
from tests.test_s21_reading import CORPUS, _read

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
