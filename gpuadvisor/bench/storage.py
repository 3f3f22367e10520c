"""bench --storage DIR: sequential write and read GB/s and 4 KiB random-read IOPS of one directory.

The jobs, with ``direct=1`` (O_DIRECT: the page cache bypassed) where the filesystem allows it:

- seq write: 1 MiB blocks up to ``file_bytes``, ``SEQ_DEPTH`` in flight, then fsync (fio ``end_fsync=1``), timed
  together, over the file laid out first (untimed, as fio lays out the file its read job needs before any job
  runs, so that its write job too writes over blocks already allocated);
- seq read: the same file, 1 MiB blocks, ``SEQ_DEPTH`` in flight;
- random read: 4 KiB reads at random 4 KiB-aligned offsets of the file, for ``seconds``, one at a time (fio's
  defaults ``ioengine=psync``, ``iodepth=1``): the device's latency.

Queue depth for the sequential jobs is what keeps the figure when other processes load the CPUs: at depth 1 every
completion waits for the thread to get a core back before the next I/O starts, and the device idles meanwhile.

With fio installed (``engine="auto"`` or ``"fio"``) fio runs the same three jobs and its JSON is read by
``gpuadvisor.importers.fio``; without it the loops below do the same I/O from Python (``os.preadv`` /
``os.pwritev`` of page-aligned buffers; the sequential ones through native AIO, ``gpuadvisor.bench.aio``).
``method`` says which.

Safety: every file is created by us with ``O_CREAT | O_EXCL | O_NOFOLLOW`` directly inside the resolved
directory (never a link, never outside it), removed on return, on error and on SIGINT/SIGTERM (the
process's fio child is killed first). A directory that is missing, not a directory, read-only or without
``2 x file_bytes + 64 MiB`` free is refused before anything is written (InputError: one line, exit 2).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import mmap
import os
import random
import secrets
import shutil
import signal
import stat
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from gpuadvisor.bench.aio import PREAD, PWRITE, Aio
from gpuadvisor.errors import InputError
from gpuadvisor.facts import StorageBench

MiB = 2**20
BLOCK = MiB
RAND_BLOCK = 4096
MARGIN = 64 * MiB
PREFIX = ".gpuadvisor-storage-"
DEFAULT_FILE_BYTES = 256 * MiB
DEFAULT_SECONDS = 2.0
_LAYOUT_SECONDS = 3600.0  # the untimed layout writes the whole file (only a failing device takes that long)
SEQ_DEPTH = 8  # sequential 1 MiB I/Os in flight (native AIO, as fio's libaio engine at this iodepth)
_clock = time.perf_counter  # what the figures are timed with (read at the two ends of each phase)
ST_RDONLY = getattr(os, "ST_RDONLY", 1)


class StorageBenchError(InputError):
    """A directory bench --storage must not or cannot write to; one line, exit 2."""


def need_bytes(file_bytes: int) -> int:
    return 2 * file_bytes + MARGIN


def check_dir(path: str, file_bytes: int, statvfs: Callable[[str], Any] = os.statvfs) -> str:
    """The resolved directory, or StorageBenchError saying what is wrong with it and what to do."""
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except FileNotFoundError:
        raise StorageBenchError(
            f"--storage {path}: no such directory (give an existing directory on the filesystem to measure)"
        ) from None
    except OSError as e:
        raise StorageBenchError(
            f"--storage {path}: cannot read it ({e.strerror}); give a directory you can write"
        ) from None
    if not stat.S_ISDIR(st.st_mode):
        raise StorageBenchError(
            f"--storage {path}: not a directory (give the directory the data or checkpoints live in)"
        )
    try:
        vfs = statvfs(real)
    except OSError as e:
        raise StorageBenchError(f"--storage {path}: statvfs failed ({e.strerror}); give another directory") from None
    if vfs.f_flag & ST_RDONLY or not os.access(real, os.W_OK | os.X_OK):
        raise StorageBenchError(
            f"--storage {path}: read-only (mounted read-only or no write permission); the "
            "benchmark writes a test file: give a writable directory on the same filesystem"
        )
    free = vfs.f_bavail * vfs.f_frsize
    need = need_bytes(file_bytes)
    if free < need:
        raise StorageBenchError(
            f"--storage {path}: {free / MiB:.0f} MiB free, the benchmark needs "
            f"{need / MiB:.0f} MiB "
            f"(a {file_bytes / MiB:.0f} MiB test file, twice, plus 64 MiB): free space or lower "
            "--storage-size"
        )
    return real


class _Files:
    """The test files of one run; removed by ``cleanup`` (idempotent), also from a signal handler."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.paths: list[str] = []
        self.procs: list[subprocess.Popen[bytes]] = []

    def create(self) -> str:
        name = f"{PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
        path = os.path.join(self.directory, name)
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600)
        os.close(fd)
        self.paths.append(path)
        return path

    def cleanup(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                with contextlib.suppress(OSError):
                    os.killpg(p.pid, signal.SIGKILL)
                with contextlib.suppress(Exception):
                    p.wait(timeout=5)
        for path in self.paths:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        self.paths = []


@contextlib.contextmanager
def _signals_clean(files: _Files) -> Iterator[None]:
    """SIGTERM (and SIGINT) remove the files, then stop the run as KeyboardInterrupt with ``signum`` set."""
    previous: dict[signal.Signals, Any] = {}

    def handler(signum: int, frame: Any) -> None:
        files.cleanup()
        e = KeyboardInterrupt()
        e.signum = signum  # type: ignore[attr-defined]
        raise e

    import threading

    main = threading.current_thread() is threading.main_thread()
    if main:
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, handler)
    try:
        yield
    finally:
        files.cleanup()
        for sig, h in previous.items():
            signal.signal(sig, h)


def _open(path: str, flags: int, direct: bool) -> int:
    return os.open(path, flags | os.O_NOFOLLOW | (getattr(os, "O_DIRECT", 0) if direct else 0))


def _direct_ok(path: str) -> bool:
    if not hasattr(os, "O_DIRECT"):
        return False
    try:
        fd = _open(path, os.O_WRONLY, True)
    except OSError as e:
        if e.errno in (errno.EINVAL, errno.EOPNOTSUPP):
            return False
        raise
    os.close(fd)
    return True


def _seq_phase(
    fd: int, total: int, seconds: float, write: bool, clock: Callable[[], float] | None = None
) -> tuple[int, float, int]:
    """Bytes moved, seconds taken and I/Os kept in flight for ``total`` bytes of 1 MiB blocks in file order.

    SEQ_DEPTH blocks stay in flight through the kernel's native AIO (what fio's libaio engine does): when the thread
    waits for a core after a completion (other processes on the CPUs), the device still has the others to do, so a
    busy machine does not slow the figure. Without native AIO the blocks go one at a time (``os.pwritev`` /
    ``os.preadv``). The deadline is checked only between blocks, so the blocks done are the file's first ones, without
    gaps. The figure is timed with ``clock`` (default ``_clock``) at the two ends, the fsync of a write included
    (fio's end_fsync=1).
    """
    clock = clock or _clock
    blocks = total // BLOCK
    try:
        aio: Aio | None = Aio(SEQ_DEPTH)
    except OSError:
        aio = None
    depth = SEQ_DEPTH if aio else 1
    bufs = [mmap.mmap(-1, BLOCK) for _ in range(depth)]  # page-aligned, as O_DIRECT wants
    cells = [(ctypes.c_char * BLOCK).from_buffer(b) for b in bufs]
    if write:
        for b in bufs:
            b.write(os.urandom(BLOCK))  # incompressible
    deadline = time.monotonic() + seconds
    nxt = done = 0
    start = clock()
    try:
        free = list(range(depth))
        inflight = 0
        while True:
            while free and nxt < blocks and time.monotonic() < deadline:
                k = free.pop()
                if write:
                    # every block different (its offset in its first bytes, as fio's scramble_buffers varies each
                    # buffer): a storage layer that deduplicates or compresses identical blocks must not flatter it
                    bufs[k][:8] = (nxt * BLOCK).to_bytes(8, "little")
                if aio is None:
                    n = os.pwritev(fd, [bufs[k]], nxt * BLOCK) if write else os.preadv(fd, [bufs[k]], nxt * BLOCK)
                    done += n
                    free.append(k)
                    if n != BLOCK:
                        blocks = nxt  # a short transfer: stop here
                else:
                    aio.queue(k, PWRITE if write else PREAD, fd, ctypes.addressof(cells[k]), BLOCK, nxt * BLOCK)
                    inflight += 1
                nxt += 1
            if aio:
                aio.flush()  # every free slot refilled, in one system call
            if not inflight:
                break
            for k, res in aio.reap() if aio else []:
                inflight -= 1
                if res < 0:
                    raise OSError(-res, os.strerror(-res))
                done += res
                free.append(k)
                if res != BLOCK:
                    blocks = nxt  # a short transfer: submit no more
        if write:
            os.fsync(fd)
        elapsed = clock() - start
    finally:
        if aio:
            aio.close()  # waits for anything still in flight (an error or a signal above) before the buffers go
        del cells
        for b in bufs:
            b.close()
    return done, elapsed, depth


def _random_phase(fd: int, view: memoryview, size: int, seconds: float) -> tuple[int, float]:
    """4 KiB reads at random aligned offsets for ``seconds``, one at a time (fio's default queue depth 1): the
    figure is the device's latency per read. Reads done and seconds taken (``_clock``)."""
    blocks = max(1, size // RAND_BLOCK)
    rng = random.Random(0x10)
    ops = 0
    deadline = time.monotonic() + seconds
    start = _clock()
    while True:
        os.preadv(fd, [view], rng.randrange(blocks) * RAND_BLOCK)
        ops += 1
        if ops % 64 == 0 and time.monotonic() >= deadline:
            break
    return ops, _clock() - start


def _python_run(path: str, file_bytes: int, seconds: float, direct: bool) -> StorageBench:
    bench = StorageBench(
        direct=direct,
        block_bytes=RAND_BLOCK,
        iodepth=1,
    )
    fd = _open(path, os.O_WRONLY, direct)
    try:
        # The file is laid out first, untimed, as fio does before its jobs start ("Laying out IO file": the read
        # job needs the data, so fio writes the whole file once and its write job then writes over it). The timed
        # write is then the same job as fio's: blocks already on the device, no allocation on the way; writing
        # into a fresh sparse file instead reads 0.6-0.8 of fio's figure on ext4 (extents allocated and
        # converted as the writes complete).
        os.ftruncate(fd, file_bytes)
        _seq_phase(fd, file_bytes, _LAYOUT_SECONDS, write=True, clock=time.perf_counter)
        written, write_s, depth = _seq_phase(fd, file_bytes, seconds, write=True)
    finally:
        os.close(fd)
    engine = f"native AIO, {depth} sequential I/Os in flight" if depth > 1 else "psync"
    bench.method = f"gpuadvisor (python {engine}, " + ("O_DIRECT)" if direct else "buffered)")
    bench.file_bytes = written
    bench.seq_write_gbps = round(written / write_s / 1e9, 3)
    if not direct and hasattr(os, "posix_fadvise"):
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # drop the clean pages: read from the device
        os.close(fd)
    fd = _open(path, os.O_RDONLY, direct)
    small = mmap.mmap(-1, mmap.PAGESIZE)
    view = memoryview(small)[:RAND_BLOCK]
    try:
        done, read_s, _ = _seq_phase(fd, written, seconds, write=False)
        bench.seq_read_gbps = round(done / read_s / 1e9, 3)
        ops, rand_s = _random_phase(fd, view, written, seconds)
    finally:
        view.release()
        small.close()
        os.close(fd)
    bench.rand_read_iops = round(ops / rand_s, 1)
    bench.rand_read_latency_us = round(rand_s / ops * 1e6, 2)
    if not direct:
        bench.notes.append("the filesystem refuses O_DIRECT: buffered I/O, reads may come from the page cache")
    return bench


def fio_path() -> str | None:
    return shutil.which("fio")


def fio_version(fio: str) -> str:
    try:
        out = subprocess.run([fio, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "fio"
    return out or "fio"


def fio_args(fio: str, path: str, file_bytes: int, seconds: float, direct: bool) -> list[str]:
    """One fio invocation, three jobs run one after the other (stonewall), on our pre-created file."""
    d = "1" if direct else "0"
    runtime = f"{max(1, round(seconds * 1000))}ms"
    # fallocate=none: no preallocated (unwritten) extents. Before any job runs fio lays the file out for the read
    # job (writes it whole), so the write job writes over blocks already on the device; the built-in loops lay the
    # file out the same way before their timed write.
    common = [
        f"--filename={path}",
        f"--size={file_bytes}",
        f"--direct={d}",
        "--fallocate=none",
        "--numjobs=1",
        "--thread",
        # one clock read per I/O at most (fio's own latency statistics are not reported): at queue depth 1 the
        # per-I/O timing fio otherwise does costs a measurable share of a 4 KiB read on a fast device
        "--gtod_reduce=1",
    ]
    # sequential: SEQ_DEPTH 1 MiB I/Os in flight from one thread (libaio), as the built-in loops keep SEQ_DEPTH
    seq = ["--bs=1M", "--ioengine=libaio", f"--iodepth={SEQ_DEPTH}", f"--runtime={runtime}", *common]
    return [
        fio,
        "--output-format=json",
        "--name=seqwrite",
        "--rw=write",
        "--end_fsync=1",
        *seq,
        "--name=seqread",
        "--stonewall",
        "--rw=read",
        *seq,
        "--name=randread",
        "--stonewall",
        "--rw=randread",
        "--bs=4k",
        "--ioengine=psync",
        "--iodepth=1",
        "--time_based",
        f"--runtime={runtime}",
        "--randseed=16",
        *common,
    ]


def _fio_run(files: _Files, fio: str, path: str, file_bytes: int, seconds: float, direct: bool) -> StorageBench:
    from gpuadvisor.importers.fio import from_json

    proc = subprocess.Popen(
        fio_args(fio, path, file_bytes, seconds, direct),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    files.procs.append(proc)
    try:
        out, err = proc.communicate(timeout=seconds * 3 + 60)
    except subprocess.TimeoutExpired:
        files.cleanup()
        limit = seconds * 3 + 60
        raise StorageBenchError(f"fio did not finish within {limit:.0f} s on {os.path.dirname(path)}") from None
    text = out.decode(errors="replace")
    if proc.returncode != 0 or "{" not in text:
        why = (err.decode(errors="replace").strip().splitlines() or ["no output"])[-1][:200]
        raise StorageBenchError(f"fio failed on {os.path.dirname(path)} (exit {proc.returncode}): {why}")
    bench = from_json(json.loads(text[text.index("{") :]), "fio")
    bench.provenance = "measured"
    bench.method = f"{fio_version(fio)} (libaio, {SEQ_DEPTH} sequential I/Os in flight, " + (
        "direct=1)" if direct else "direct=0)"
    )
    bench.file_bytes = file_bytes
    bench.direct = direct
    if not direct:
        bench.notes.append("the filesystem refuses O_DIRECT: buffered I/O, reads may come from the page cache")
    return bench


def run_storage_bench(
    path: str,
    *,
    file_bytes: int = DEFAULT_FILE_BYTES,
    seconds: float = DEFAULT_SECONDS,
    engine: str = "auto",
    statvfs: Callable[[str], Any] = os.statvfs,
) -> StorageBench:
    """Measure ``path``; engine auto (fio if installed, else python) | fio | python."""
    if file_bytes < BLOCK or file_bytes % RAND_BLOCK:
        raise StorageBenchError(f"--storage-size {file_bytes}: at least 1 MiB and a multiple of 4 KiB")
    directory = check_dir(path, file_bytes, statvfs)
    fio = fio_path() if engine in ("auto", "fio") else None
    if engine == "fio" and fio is None:
        raise StorageBenchError(
            "--storage-engine fio: fio is not installed (apt-get install fio, or use --storage-engine python)"
        )
    files = _Files(directory)
    with _signals_clean(files):
        try:
            target = files.create()
        except OSError as e:
            raise StorageBenchError(
                f"--storage {path}: cannot create a test file ({e.strerror}); give a writable directory"
            ) from None
        direct = _direct_ok(target)
        try:
            if fio:
                return _fio_run(files, fio, target, file_bytes, seconds, direct)
            return _python_run(target, file_bytes, seconds, direct)
        except OSError as e:
            if e.errno == errno.ENOSPC:
                raise StorageBenchError(
                    f"--storage {path}: the filesystem filled up during the test; free space or lower --storage-size"
                ) from None
            raise StorageBenchError(f"--storage {path}: I/O failed ({e.strerror})") from None


def leftovers(directory: str | os.PathLike[str]) -> list[str]:
    """Test files a run left behind (none, unless it was killed with SIGKILL)."""
    return sorted(p.name for p in Path(directory).iterdir() if p.name.startswith(PREFIX))


def render(path: str, bench: StorageBench) -> str:
    lines = [f"storage benchmark of {path}: {bench.method}"]
    size = f"{(bench.file_bytes or 0) / MiB:.0f} MiB file"
    if bench.seq_write_gbps is not None:
        lines.append(f"  sequential write  {bench.seq_write_gbps:8.2f} GB/s   (1 MiB blocks, {size}, fsync included)")
    if bench.seq_read_gbps is not None:
        lines.append(f"  sequential read   {bench.seq_read_gbps:8.2f} GB/s   (1 MiB blocks, {SEQ_DEPTH} in flight)")
    if bench.rand_read_iops is not None:
        lat = f", {bench.rand_read_latency_us:.0f} us each" if bench.rand_read_latency_us else ""
        lines.append(f"  4 KiB random read {bench.rand_read_iops:8.0f} IOPS   (queue depth {bench.iodepth or 1}{lat})")
    lines += [f"  note: {n}" for n in bench.notes]
    return "\n".join(lines) + "\n"
