"""The few CUDA runtime calls torch does not expose, through ctypes on the libcudart torch already loaded.

Peer copies are measured as p2pBandwidthLatencyTest (CUDA samples) does: ``cudaMemcpyPeerAsync`` before
and after ``cudaDeviceEnablePeerAccess``. Without peer access the driver stages the copy through host memory,
so "P2P off" shows what a GPU pair gives when P2P is unavailable or disabled. torch would enable peer access
by itself on its first cross-device copy; the copy worker never makes one before its P2P-off runs.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from pathlib import Path


class CudaRtError(RuntimeError):
    pass


class CudaRt:
    def __init__(self) -> None:
        path = self._find()
        self.path = path
        self.lib = ctypes.CDLL(path)
        lib = self.lib
        lib.cudaGetErrorString.restype = ctypes.c_char_p
        lib.cudaGetErrorString.argtypes = [ctypes.c_int]
        lib.cudaDeviceCanAccessPeer.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_int]
        lib.cudaSetDevice.argtypes = [ctypes.c_int]
        lib.cudaDeviceEnablePeerAccess.argtypes = [ctypes.c_int, ctypes.c_uint]
        lib.cudaDeviceDisablePeerAccess.argtypes = [ctypes.c_int]
        lib.cudaMemcpyPeerAsync.argtypes = [
            ctypes.c_void_p,
            ctypes.c_int,
            ctypes.c_void_p,
            ctypes.c_int,
            ctypes.c_size_t,
            ctypes.c_void_p,
        ]
        lib.cudaGetLastError.argtypes = []

    @staticmethod
    def _find() -> str:
        """The libcudart mapped into this process (torch's), else the one the loader finds."""
        try:
            for line in Path("/proc/self/maps").read_text().splitlines():
                parts = line.split()
                if len(parts) >= 6 and "/libcudart.so" in parts[-1]:
                    return parts[-1]
        except OSError:
            pass
        name = ctypes.util.find_library("cudart")
        if not name:
            raise CudaRtError("libcudart not found (initialise CUDA through torch first)")
        return name

    def _check(self, rc: int, what: str) -> None:
        if rc != 0:
            msg = self.lib.cudaGetErrorString(rc)
            raise CudaRtError(f"{what}: CUDA error {rc} ({msg.decode() if msg else '?'})")

    def can_access_peer(self, dev: int, peer: int) -> bool:
        out = ctypes.c_int(0)
        self._check(self.lib.cudaDeviceCanAccessPeer(ctypes.byref(out), dev, peer), "cudaDeviceCanAccessPeer")
        return bool(out.value)

    def enable_peer_access(self, dev: int, peer: int) -> None:
        self._check(self.lib.cudaSetDevice(dev), "cudaSetDevice")
        rc = self.lib.cudaDeviceEnablePeerAccess(peer, 0)
        if rc == 704:  # cudaErrorPeerAccessAlreadyEnabled
            self.lib.cudaGetLastError()
            return
        self._check(rc, f"cudaDeviceEnablePeerAccess({dev} -> {peer})")

    def memcpy_peer_async(self, dst: int, dst_dev: int, src: int, src_dev: int, nbytes: int, stream: int) -> None:
        rc = self.lib.cudaMemcpyPeerAsync(
            ctypes.c_void_p(dst),
            dst_dev,
            ctypes.c_void_p(src),
            src_dev,
            ctypes.c_size_t(nbytes),
            ctypes.c_void_p(stream),
        )
        self._check(rc, "cudaMemcpyPeerAsync")
