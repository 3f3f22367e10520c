"""Linux native AIO (io_setup / io_submit / io_getevents, the interface fio's ``libaio`` engine uses) from the
standard library: the system calls through ctypes, the structures as the kernel's ``include/uapi/linux/aio_abi.h``
lays them out. Only what bench --storage needs: preads and pwrites of whole buffers at an offset, several in
flight from one thread.

``Aio(depth)`` raises OSError where the kernel or the platform has no native AIO (ENOSYS, an architecture without
known system-call numbers): the caller falls back to blocking I/O.
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys
from types import TracebackType

# asm/unistd_64.h (x86_64) and asm-generic/unistd.h (aarch64, riscv64)
_NR = {
    "x86_64": {"setup": 206, "destroy": 207, "getevents": 208, "submit": 209},
    "aarch64": {"setup": 0, "destroy": 1, "submit": 2, "getevents": 4},
    "riscv64": {"setup": 0, "destroy": 1, "submit": 2, "getevents": 4},
}
PREAD, PWRITE = 0, 1  # IOCB_CMD_PREAD, IOCB_CMD_PWRITE


class _Iocb(ctypes.Structure):  # little-endian layout (aio_key before aio_rw_flags)
    _fields_ = [
        ("aio_data", ctypes.c_uint64),
        ("aio_key", ctypes.c_uint32),
        ("aio_rw_flags", ctypes.c_int32),
        ("aio_lio_opcode", ctypes.c_uint16),
        ("aio_reqprio", ctypes.c_int16),
        ("aio_fildes", ctypes.c_uint32),
        ("aio_buf", ctypes.c_uint64),
        ("aio_nbytes", ctypes.c_uint64),
        ("aio_offset", ctypes.c_int64),
        ("aio_reserved2", ctypes.c_uint64),
        ("aio_flags", ctypes.c_uint32),
        ("aio_resfd", ctypes.c_uint32),
    ]


class _Event(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_uint64),
        ("obj", ctypes.c_uint64),
        ("res", ctypes.c_int64),
        ("res2", ctypes.c_int64),
    ]


class Aio:
    """One AIO context of ``depth`` slots; ``queue`` I/Os tagged by their slot (0 to depth - 1) and ``flush`` them
    to the kernel in one io_submit (``submit``: both for one I/O); ``reap`` (tag, result) pairs.

    Each slot's control block is allocated once and filled in place, and the I/Os queued while the thread ran go to
    the kernel in one system call: the fewer instructions between a completion and the next submission, the less
    the figure depends on the thread getting a core back (other processes on the CPUs)."""

    def __init__(self, depth: int) -> None:
        nr = _NR.get(platform.machine()) if os.name == "posix" and platform.system() == "Linux" else None
        if nr is None or ctypes.sizeof(_Iocb) != 64 or sys.byteorder != "little":
            raise OSError(38, "no native AIO on this platform")
        self._nr = nr
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._libc.syscall.restype = ctypes.c_long
        self._ctx = ctypes.c_ulong(0)
        self._call("setup", ctypes.c_long(depth), ctypes.byref(self._ctx))
        self._events = (_Event * depth)()
        self._cbs = (_Iocb * depth)()  # one control block per slot, alive as long as the context
        self._ptrs = (ctypes.POINTER(_Iocb) * depth)()
        self._queued = 0
        self._pending: set[int] = set()

    def _call(self, name: str, *args: object) -> int:
        while True:
            rc = int(self._libc.syscall(ctypes.c_long(self._nr[name]), *args))
            if rc >= 0:
                return rc
            err = ctypes.get_errno()
            if err != 4:  # EINTR: a signal's Python handler runs after this returns; the call is retried
                raise OSError(err, os.strerror(err))

    def queue(self, tag: int, opcode: int, fd: int, address: int, nbytes: int, offset: int) -> None:
        """Fill slot ``tag``'s control block (a slot not in flight) and queue it for the next ``flush``."""
        if tag in self._pending:
            raise ValueError(f"AIO slot {tag} is still in flight")
        cb = self._cbs[tag]
        cb.aio_data, cb.aio_lio_opcode, cb.aio_fildes = tag, opcode, fd
        cb.aio_buf, cb.aio_nbytes, cb.aio_offset = address, nbytes, offset
        self._ptrs[self._queued] = ctypes.pointer(cb)
        self._queued += 1
        self._pending.add(tag)

    def flush(self) -> None:
        """Hand every queued I/O to the kernel (io_submit takes them in order; what it leaves is submitted again)."""
        done = 0
        while done < self._queued:
            rest = ctypes.byref(self._ptrs, done * ctypes.sizeof(ctypes.c_void_p))
            done += self._call("submit", self._ctx, ctypes.c_long(self._queued - done), rest)
        self._queued = 0

    def submit(self, tag: int, opcode: int, fd: int, address: int, nbytes: int, offset: int) -> None:
        self.queue(tag, opcode, fd, address, nbytes, offset)
        self.flush()

    def reap(self, at_least: int = 1) -> list[tuple[int, int]]:
        n = self._call(
            "getevents", self._ctx, ctypes.c_long(at_least), ctypes.c_long(len(self._events)), self._events, None
        )
        out = [(int(e.data), int(e.res)) for e in self._events[:n]]
        for tag, _ in out:
            self._pending.discard(tag)
        return out

    def close(self) -> None:
        if self._ctx.value:
            self._libc.syscall(ctypes.c_long(self._nr["destroy"]), self._ctx)  # waits for what is in flight
            self._ctx = ctypes.c_ulong(0)
            self._pending.clear()

    def __enter__(self) -> Aio:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
