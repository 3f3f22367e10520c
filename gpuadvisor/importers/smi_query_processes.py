"""The Processes section of each GPU in ``nvidia-smi -q`` and ``-q -x``: every process with its type.

-q prints, per process, ``Process ID : 2936`` over ``Type : C+G``, ``Name : ...`` and ``Used GPU Memory : 1025 MiB``
(``Not available in WDDM driver model`` on Windows; MIG adds ``GPU instance ID`` and ``Compute instance ID`` lines
before it), or ``Processes : None``; -q -x a ``<processes>`` element of ``<process_info>`` with ``<pid>``,
``<type>``, ``<process_name>`` and ``<used_memory>``. The type is nvidia-smi's: C (compute), G (graphics), C+G,
M (MPS), M+C.
"""

from __future__ import annotations

from gpuadvisor.facts import GpuProcess
from gpuadvisor.importers import values as v
from gpuadvisor.importers.tree import Node

_KINDS = ("C", "G", "C+G", "M", "M+C")


def processes(blocks: list[Node], xml: bool) -> list[GpuProcess] | None:
    """The processes of the GPU blocks, GPU N being the Nth block; None when a block shows no Processes section
    (a -d filter, an older driver), [] when each says None."""
    out: list[GpuProcess] = []
    for index, block in enumerate(blocks):
        section = block.child("processes")
        if section is None or section.elision():
            return None
        rows = [c for c in section.children if c.key == "process_info"] if xml else section.children
        for row in rows:
            proc = _process(row, index, xml)
            if proc is not None:
                out.append(proc)
    return out


def _process(row: Node, index: int, xml: bool) -> GpuProcess | None:
    """One process: -q's ``Process ID`` node (its fields below it), -q -x's ``<process_info>``."""
    if xml:
        fields = {c.key.lower(): c.value for c in row.children}
        pid, kind, name, used = (fields.get(k) for k in ("pid", "type", "process_name", "used_memory"))
    elif row.key.lower() == "process id":
        fields = {c.key.lower(): c.value for c in row.children}
        pid, kind, name, used = row.value, fields.get("type"), fields.get("name"), fields.get("used gpu memory")
    else:
        return None  # "GPU instance ID", "Compute instance ID": the MIG lines before a process
    if pid is None or not pid.strip().isdigit() or len(pid.strip()) > 10:
        return None
    kind = kind.strip() if kind else None
    return GpuProcess(
        gpu_index=index,
        pid=int(pid),
        name=name.strip() if name and name.strip() else None,
        used_bytes=v.mem_bytes(used),
        kind=kind if kind in _KINDS else None,
    )
