"""bench --storage DIR: sequential write and read GB/s and 4 KiB random-read IOPS of one directory.

The jobs are fio's defaults where fio has them (``ioengine=psync``, ``iodepth=1``, one job) with
``direct=1`` (O_DIRECT: the page cache bypassed) where the filesystem allows it:

- seq write: 1 MiB blocks up to ``file_bytes``, then fsync (fio ``end_fsync=1``), timed together;
- seq read: the same file, 1 MiB blocks;
- random read: 4 KiB reads at random 4 KiB-aligned offsets of the file, for ``seconds``.

With fio installed (``engine="auto"`` or ``"fio"``) fio runs the same three jobs and its JSON is read by
``gpuadvisor.importers.fio``; without it the loops below do the same I/O from Python (``os.preadv`` /
``os.write`` into a page-aligned buffer). ``method`` says which.

Safety: every file is created by us with ``O_CREAT | O_EXCL | O_NOFOLLOW`` directly inside the resolved
directory (never a link, never outside it), removed on return, on error and on SIGINT/SIGTERM (the
process's fio child is killed first). A directory that is missing, not a directory, read-only or without
``2 x file_bytes + 64 MiB`` free is refused before anything is written (InputError: one line, exit 2).
"""

from __future__ import annotations

import contextlib
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

from gpuadvisor.errors import InputError
from gpuadvisor.facts import StorageBench

MiB = 2**20
BLOCK = MiB
RAND_BLOCK = 4096
MARGIN = 64 * MiB
PREFIX = ".gpuadvisor-storage-"
DEFAULT_FILE_BYTES = 256 * MiB
DEFAULT_SECONDS = 2.0
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


def _python_run(path: str, file_bytes: int, seconds: float, direct: bool) -> StorageBench:
    bench = StorageBench(
        method="gpuadvisor (python psync, " + ("O_DIRECT)" if direct else "buffered)"),
        direct=direct,
        block_bytes=RAND_BLOCK,
        iodepth=1,
    )
    buf = mmap.mmap(-1, BLOCK)  # page-aligned, as O_DIRECT wants
    buf.write(os.urandom(BLOCK))  # incompressible
    fd = _open(path, os.O_WRONLY, direct)
    # The file is sized first, as fio does with the file it writes (ftruncate to --size, no preallocation): the
    # same layout on disk, so the two measure the same writes.
    os.ftruncate(fd, file_bytes)
    written = 0
    start = time.perf_counter()
    try:
        while written < file_bytes and time.perf_counter() - start < seconds:
            # every block different (its offset in its first bytes, as fio's scramble_buffers varies each buffer):
            # a storage layer that deduplicates or compresses identical blocks must not flatter the figure
            buf[:8] = written.to_bytes(8, "little")
            n = os.write(fd, buf)
            if n <= 0:
                break
            written += n
        os.fsync(fd)
    finally:
        os.close(fd)
    write_s = time.perf_counter() - start
    bench.file_bytes = written
    bench.seq_write_gbps = round(written / write_s / 1e9, 3)
    if not direct and hasattr(os, "posix_fadvise"):
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # drop the clean pages: read from the device
        os.close(fd)
    fd = _open(path, os.O_RDONLY, direct)
    try:
        done = 0
        start = time.perf_counter()
        while done < written and time.perf_counter() - start < seconds:
            n = os.preadv(fd, [buf], done)
            if n <= 0:
                break
            done += n
        read_s = time.perf_counter() - start
        bench.seq_read_gbps = round(done / read_s / 1e9, 3)
        small = mmap.mmap(-1, mmap.PAGESIZE)
        view = memoryview(small)[:RAND_BLOCK]
        blocks = max(1, written // RAND_BLOCK)
        rng = random.Random(0x10)
        ops = 0
        start = time.perf_counter()
        deadline = start + seconds
        while True:
            os.preadv(fd, [view], rng.randrange(blocks) * RAND_BLOCK)
            ops += 1
            if ops % 64 == 0 and time.perf_counter() >= deadline:
                break
        rand_s = time.perf_counter() - start
        view.release()
        small.close()
    finally:
        os.close(fd)
    buf.close()
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
    # fallocate=none: the file grows as it is written, like the built-in loops and a checkpoint save (fio's
    # default preallocates, and writing into preallocated extents is slower on ext4 and xfs).
    common = [
        f"--filename={path}",
        f"--size={file_bytes}",
        f"--direct={d}",
        "--ioengine=psync",
        "--iodepth=1",
        "--fallocate=none",
        "--numjobs=1",
        "--thread",
        # one clock read per I/O at most (fio's own latency statistics are not reported): at queue depth 1 the
        # per-I/O timing fio otherwise does costs a measurable share of a 4 KiB read on a fast device
        "--gtod_reduce=1",
    ]
    return [
        fio,
        "--output-format=json",
        "--name=seqwrite",
        "--rw=write",
        "--bs=1M",
        "--end_fsync=1",
        f"--runtime={runtime}",
        *common,
        "--name=seqread",
        "--stonewall",
        "--rw=read",
        "--bs=1M",
        f"--runtime={runtime}",
        *common,
        "--name=randread",
        "--stonewall",
        "--rw=randread",
        "--bs=4k",
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
    bench.method = f"{fio_version(fio)} (psync, iodepth 1, " + ("direct=1)" if direct else "direct=0)")
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
        lines.append(f"  sequential read   {bench.seq_read_gbps:8.2f} GB/s   (1 MiB blocks)")
    if bench.rand_read_iops is not None:
        lat = f", {bench.rand_read_latency_us:.0f} us each" if bench.rand_read_latency_us else ""
        lines.append(f"  4 KiB random read {bench.rand_read_iops:8.0f} IOPS   (queue depth {bench.iodepth or 1}{lat})")
    lines += [f"  note: {n}" for n in bench.notes]
    return "\n".join(lines) + "\n"
