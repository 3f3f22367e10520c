"""The Processes section of each GPU in ``nvidia-smi -q`` and ``-q -x``: every process with its type.

-q prints, per process, ``Process ID : 2936`` over ``Type : C+G``, ``Name : ...`` and ``Used GPU Memory : 1025 MiB``
(``Not available in WDDM driver model`` on Windows; MIG adds ``GPU instance ID`` and ``Compute instance ID`` lines
before it), or ``Processes : None``; -q -x a ``<processes>`` element of ``<process_info>`` with ``<pid>``,
``<type>``, ``<process_name>`` and ``<used_memory>``. The type is nvidia-smi's: C (compute), G (graphics), C+G,
M (MPS), M+C.
"""

from __future__ import annotations

from gpuadvisor.facts import GpuProcess, Rig
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


# The keys of -q's Processes section (a paste of that section alone names no GPU)
PROCESS_KEYS = {"processes", "gpu instance id", "compute instance id", "process id", "type", "name", "used gpu memory"}


def processes_only(root: Node) -> bool:
    """Only the Processes section's keys; the paste's last line may be one of them cut short (``GPU instan``)."""
    children = [c for c in root.children if not c.elided]
    if children and _cut_key(children[-1]):
        children.pop()
    keys = {c.key.lower() for c in children}
    return "process id" in keys and keys <= PROCESS_KEYS or keys == {"processes"}


def _cut_key(node: Node) -> bool:
    """A key line cut short at the end of a paste: no value, no colon, the start of one of Processes' keys."""
    key = node.key.lower()
    return node.value is None and not node.children and any(k.startswith(key) and k != key for k in PROCESS_KEYS)


def processes_fragment(root: Node, source: str) -> Rig:
    """-q's Processes section alone: no GPU, no driver line; the processes it lists are noted (their GPU is not
    shown, so no GPU's memory can be said to be held); the caller reads the software lines."""
    rig = Rig()
    procs = max(([n for n in root.walk() if n.key.lower() == k] for k in ("process id", "name")), key=len)  # cut
    kinds = sorted({n.value for n in root.walk() if n.key.lower() == "type" and n.value and not n.elided})
    rig.problems.append(
        f"{source}: line {root.line}: nvidia-smi -q's Processes section alone: {len(procs)} process(es)"
        + (f" (type {', '.join(kinds)})" if kinds else "")
        + ", the GPU they run on not shown"
    )
    return rig
