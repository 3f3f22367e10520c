"""An application's failed registration of memory with the RDMA adapter, EFAULT: ``ibv_reg_mr failed (errno 14) (Ib
failure: Bad address)`` (MSCCL++'s IbError, under its ``[IbMr]`` debug lines), ``ibv_reg_mr failed, Bad address``
(Accelio), ``Call to ibv_reg_mr failed with error Bad address`` (NCCL's words for a verbs call).

ibv_reg_mr pins the pages of the range it registers (the kernel's ib_umem_get); on GPU memory only a peer-memory
client (nvidia_peermem, the older nv_peer_mem) can pin them, or the memory is registered through dma-buf
(ibv_reg_dmabuf_mr). EFAULT on GPU memory is therefore GPUDirect RDMA not working for that buffer: the peer-memory
module not loaded or not taking the range (memory from CUDA's virtual memory API, cuMemCreate, is not pinnable
through it: dma-buf is its path), not a fault of the adapter or the GPU. The registration's debug lines above it
(MSCCL++'s ``memoryType=2 device=4``, ``nv_peer_mem loaded: yes``, ``dmaBufSupported: 0``) are read with it.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import KernelEvent, KernelLog, Rig
from gpuadvisor.importers.section import Section, outside_log

KIND = "gpu-mr-failed"
# the verbs call's failure with EFAULT, in the words programs print it
FAILED = re.compile(r"\bibv_reg_(?:dmabuf_)?mr\w*\W{1,4}failed\b[^\n]{0,80}?(?:errno:? ?14\b|[Bb]ad address)")
_MENTION = re.compile(r"\bibv_reg_(?:dmabuf_)?mr\w*\b")
_ABOVE = 20  # lines of the registration's own debug output looked at above its failure
_GPU = re.compile(r"memoryType=2\b|\bcuMemAlloc: 1\b|\bdevice=\d|\bGPU \d|\bcuda|peer_?mem", re.IGNORECASE)
_PEERMEM = re.compile(r"\b(nv_peer_mem|nvidia_peermem|peer_?mem) loaded: (\w+)")
_DMABUF = re.compile(r"\bdmaBufSupported: (\d)")


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """The failure line, or the first line naming ibv_reg_mr above it (its debug output), outside a log, an NCCL
    log and another such output."""
    if "ibv_reg_" not in lines[i] or not outside_log(current):
        return False
    if current is not None and current.kind in (KIND, "nccl-debug"):  # NCCL's reader takes its own WARN lines
        return False
    return bool(FAILED.search(lines[i])) or (
        bool(_MENTION.search(lines[i])) and any(FAILED.search(x) for x in lines[i + 1 : i + _ABOVE])
    )


def parse(text: str, source: str, first: int) -> Rig:
    """The first failed registration as one event (judged with GPUDirect RDMA, GA825): its line, how many more, and
    what the lines around it say of the memory (GPU memory, the peer-memory module, dma-buf)."""
    lines = text.splitlines()
    failed = [(n, line.strip()) for n, line in enumerate(lines) if "ibv_reg_" in line and FAILED.search(line)]
    events = []
    if failed:
        n, said = failed[0]
        shown = "\n".join(lines[max(0, n - _ABOVE) : n + 1])
        about = [("GPU memory" if _GPU.search(shown) else "memory the paste does not show to be the GPU's")]
        if m := _PEERMEM.search(shown):
            about.append(f"{m.group(1)} loaded: {m.group(2)}")
        if m := _DMABUF.search(shown):
            about.append("dma-buf " + ("supported" if m.group(1) == "1" else "not supported"))
        more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
        text_ = f"{said[:200]}{more} [{'; '.join(about)}]"
        events.append(KernelEvent(kind=KIND, code=14, text=text_, line=first + n))
    rig = Rig()
    rig.kernel = KernelLog(source="imported", lines_read=len(lines), events=events)
    rig.kernel.unavailable["uptime_s"] = "a pasted log does not say how long the host had been up"
    rig.origins["kernel.events"] = f"{source}:{first}"
    return rig
