"""What the command line that launched an nccl-tests binary says about its run, and what a failed run prints.

nccl-tests runs ``nThreads x nGpus`` ranks in each process (``-t``, ``-g``; 1 each by default) and one process per
MPI rank, so a run launched by ``mpirun -np 2 ./all_reduce_perf -g 1`` has 2 ranks (nccl-tests' README,
https://github.com/NVIDIA/nccl-tests#usage: "-t,--nthreads <num threads>", "-g,--ngpus <GPUs per thread>"; "Run
with MPI on 10 processes (potentially on multiple nodes) with 4 GPUs each, for a total of 40 GPUs:
mpirun -np 10 ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 4").
"""

from __future__ import annotations

import re

# What a run that failed before its first size prints (nccl-tests' own checks, MPI, the shell).
FAILED = re.compile(
    r"\b(?:NCCL failure|Test NCCL failure|Test CUDA failure|CUDA failure|Test failure|Segmentation fault|"
    r"core dumped|Aborted|Killed|mpirun noticed|exited on signal|NCCL WARN|unhandled (?:system|cuda) error|"
    r"internal error|timed out|Bus error)\b",
    re.IGNORECASE,
)
# NCCL's warnings that tell of a fallback, after which the run goes on (NCCL's init: no verbs library or no IB device
# -> the socket transport; no network plugin -> the built-in ones): a run whose paste ends after one of them is cut,
# not failed (the rows that follow in the whole paste were measured)
_FALLBACK = re.compile(
    r"NCCL WARN (?:Failed to open libibverbs|NET/IB : No device found|NET/Plugin ?: (?:No plugin found|Plugin load)"
    r"|Failed to find ncclNetPlugin|Could not find real path)",
    re.IGNORECASE,
)


def failed(line: str) -> bool:
    """A line that tells of a failed run (an error, a crash, a warning other than a fallback NCCL takes)."""
    return FAILED.search(line) is not None and _FALLBACK.search(line) is None


_PERF = re.compile(r"\b\w+_perf(?:_mpi)?\b(?!\.)")  # not a file named after it (all_reduce_perf.txt)
_LAUNCHER = re.compile(r"(?:^|[\s/$#>])(?:mpirun|mpiexec(?:\.hydra)?|srun|orterun)\s")
# the launcher's process count: Open MPI/MPICH's -np/-n/--np, Slurm's -n/--ntasks (never -N: nodes or per node)
_PROCS = re.compile(r"(?:^|\s)(?:-np|--np|-n|--n|--ntasks)(?:\s+|=)(\d+)(?=\s|$)")


def _option(args: str, short: str, long: str) -> int | None:
    m = re.search(rf"(?:^|\s)(?:{short}|{long})(?:\s+|=)(\d+)(?=\s|$)", args)
    return int(m.group(1)) if m else None


def launched_ranks(hint: str) -> int | None:
    """The ranks the last command line in ``hint`` that runs an nccl-tests binary asks for: its processes (1
    without a launcher; unknown when a launcher's count is not given) x ``-t`` x ``-g``. None when no such line."""
    line = next((x for x in reversed(hint.splitlines()) if _PERF.search(x)), None)
    if line is None:
        return None
    m = _PERF.search(line)
    assert m is not None
    before, after = line[: m.start()], line[m.end() :]
    procs = 1
    if _LAUNCHER.search(" " + before):
        p = _PROCS.search(before)
        if p is None:
            return None  # mpirun --hostfile alone: as many processes as the file's slots, not shown
        procs = int(p.group(1))
    threads = _option(after, "-t", "--nthreads") or 1
    gpus = _option(after, "-g", "--ngpus") or 1
    return procs * threads * gpus or None


# nccl-tests binary -> Measurement.kind
BINARIES = {
    "all_reduce": "all_reduce",
    "all_gather": "all_gather",
    "reduce_scatter": "reduce_scatter",
    "broadcast": "broadcast",
    "reduce": "reduce",
    "alltoall": "alltoall",
    "sendrecv": "sendrecv",
    "gather": "gather",
    "scatter": "scatter",
    "hypercube": "hypercube",
}
_BINARY = re.compile(r"\b(" + "|".join(sorted(BINARIES, key=len, reverse=True)) + r")_perf\b")


def named_binary(hint: str, first: list[str]) -> str | None:
    """The nccl-tests binary the text above an output (its command line, the file's name) or the output's first
    lines name."""
    m = _BINARY.search(hint) or _BINARY.search("\n".join(first))
    return m.group(1) if m else None
