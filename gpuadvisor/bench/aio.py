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
    """One AIO context of ``depth`` slots; ``submit`` one I/O tagged ``tag``, ``reap`` (tag, result) pairs."""

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
        self._pending: dict[int, _Iocb] = {}

    def _call(self, name: str, *args: object) -> int:
        while True:
            rc = int(self._libc.syscall(ctypes.c_long(self._nr[name]), *args))
            if rc >= 0:
                return rc
            err = ctypes.get_errno()
            if err != 4:  # EINTR: a signal's Python handler runs after this returns; the call is retried
                raise OSError(err, os.strerror(err))

    def submit(self, tag: int, opcode: int, fd: int, address: int, nbytes: int, offset: int) -> None:
        cb = _Iocb(aio_data=tag, aio_lio_opcode=opcode, aio_fildes=fd, aio_buf=address, aio_nbytes=nbytes)
        cb.aio_offset = offset
        ptr = ctypes.pointer(cb)
        self._call("submit", self._ctx, ctypes.c_long(1), ctypes.byref(ptr))
        self._pending[tag] = cb  # kept alive until its completion is reaped

    def reap(self, at_least: int = 1) -> list[tuple[int, int]]:
        n = self._call(
            "getevents", self._ctx, ctypes.c_long(at_least), ctypes.c_long(len(self._events)), self._events, None
        )
        out = [(int(e.data), int(e.res)) for e in self._events[:n]]
        for tag, _ in out:
            self._pending.pop(tag, None)
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
