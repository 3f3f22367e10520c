"""``nvidia-smi topo -m`` (or ``-p2p``) pasted from a row below GPU0, without its header line: the header read
back from the rows when they show it unambiguously.

nvidia-smi prints the columns in the order of the rows (GPU0, GPU1, ..., then NIC0, NIC1, ...), each row's own
column holding ``X``, then the affinity columns. So a GPU row GPUk has its ``X`` in link column k, and a NIC row
NICj has its ``X`` in link column N + j, N being the GPU count: one NIC row tells N, and the link cells of a row
tell N plus the NIC count. Without a NIC row, N is told only when the highest GPU row shown is the last link
column (every column a GPU). A row that does not fit (its ``X`` elsewhere, a label out of order) leaves the
fragment unread.
"""

from __future__ import annotations

import re

from gpuadvisor.importers.topo_pipe import MATRIX_WORDS

_LABEL = re.compile(r"^(GPU|NIC)(\d+)$")
_LINK = re.compile(r"^(?:X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC|OK|CNS|GNS|TNS|NS|DIS|U)$")
FRAGMENT_START = re.compile(r"^\s*GPU([1-9]\d*)\s+(?:X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC|OK|CNS|GNS|TNS|NS|DIS|U)\s")


def _links(tokens: list[str]) -> list[str]:
    return tokens[: next((k for k, c in enumerate(tokens) if not _LINK.match(c)), len(tokens))]


def fragment_header(lines: list[str]) -> tuple[str, str] | None:
    """The header the fragment's rows show (tab-separated, as :func:`topo.headless_header` gives it) and how it was
    told; None when the first row is no GPU row past GPU0 or the rows leave the columns ambiguous."""
    rows: list[tuple[str, int, list[str]]] = []
    for x in lines:
        tokens = x.split()
        m = _LABEL.match(tokens[0]) if tokens else None
        if not m or len(tokens) < 2 or not _LINK.match(tokens[1]):
            if rows:
                break
            continue
        rows.append((m.group(1), int(m.group(2)), tokens[1:]))
    if not rows or rows[0][0] != "GPU" or rows[0][1] == 0:
        return None
    width = len(_links(rows[0][2]))  # the link columns: GPUs then NICs
    n_gpu: int | None = None
    how = ""
    for kind, k, cells in rows:
        links = _links(cells)
        at = links.index("X") if "X" in links else None
        if at is None:
            continue  # a row cut before its X
        if kind == "GPU" and at != k:
            return None
        if kind == "NIC":
            if n_gpu is not None and at - k != n_gpu or at - k < 1:
                return None
            n_gpu, how = at - k, f"NIC{k}'s row has its X in link column {at + 1}"
    top = max(k for kind, k, _ in rows if kind == "GPU")
    if n_gpu is None and top == width - 1 and not any(kind == "NIC" for kind, _, _ in rows):
        n_gpu, how = width, f"GPU{top}'s row has its X in the last link column"
    if n_gpu is None or n_gpu <= top or n_gpu > width:
        return None
    nics = [f"NIC{j}" for j in range(width - n_gpu)]
    if any(kind == "NIC" and k >= len(nics) for kind, k, _ in rows):
        return None
    after = len(rows[0][2]) - width
    columns = [*(f"GPU{i}" for i in range(n_gpu)), *nics, *MATRIX_WORDS[: max(0, min(3, after))]]
    told = (
        f"no header line (the paste begins at GPU{rows[0][1]}'s row): its columns taken to be GPU0-GPU{n_gpu - 1}"
        + (f" then NIC0-NIC{len(nics) - 1}" if nics else "")
        + f" ({how}), then the affinity columns, in nvidia-smi's order"
    )
    return "\t" + "\t".join(columns), told
