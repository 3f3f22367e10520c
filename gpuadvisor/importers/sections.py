"""Cut a text into the command outputs it holds, each named by what printed it.

People paste several outputs into one file (``nvidia-smi; nvidia-smi -q; nvidia-smi topo -m``), with shell
prompts between them. Each output is recognised by its own first line, never by the file name:

========================  =====================================================================
kind                      starts with
========================  =====================================================================
``smi-xml``               ``<?xml`` or ``<nvidia_smi_log`` (ends at ``</nvidia_smi_log>``)
``smi-q``                 ``==============NVSMI LOG==============``
``smi-summary``           ``| NVIDIA-SMI 580.95.05  Driver Version: ...`` (plain ``nvidia-smi``)
``topo-m``/``topo-p2p``   a header row of ``GPU0 GPU1 ...`` followed by a ``GPU0`` row
``nvlink``                ``GPU 0: <name> (UUID: GPU-...)`` (``nvlink -s``; without link lines: ``-L``)
``lspci``                 ``01:00.0 VGA compatible controller: ...`` at the start of a line
``nccl-tests``            ``# nThread``, ``# nccl-tests version``, ``# Collective test starting``
``cuda-p2p``              ``[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]`` (CUDA samples)
``cuda-bw``               ``[CUDA Bandwidth Test] - Starting...`` (CUDA samples)
========================  =====================================================================

Pasted fragments are read too: ``nvidia-smi -q`` from ``Timestamp`` (or ``Driver Version``, or a ``GPU
0000..`` block) down without its banner, and ``lspci -vv`` lines grepped down to ``LnkCap``/``LnkSta`` or
``Capabilities:`` with no device line (the device is then unknown, see lspci.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gpuadvisor.importers.beyond import KIND_NAMES as BEYOND_KIND_NAMES
from gpuadvisor.importers.beyond import start_kind as beyond_start_kind
from gpuadvisor.importers.values import DEV_PREFIX, strip_ansi

KIND_NAMES = {
    "smi-xml": "nvidia-smi -q -x",
    "smi-q": "nvidia-smi -q",
    "smi-summary": "nvidia-smi",
    "topo-m": "nvidia-smi topo -m",
    "topo-p2p": "nvidia-smi topo -p2p",
    "nvlink": "nvidia-smi nvlink -s",
    "smi-list": "nvidia-smi -L",
    "lspci": "lspci -vv",
    "nccl-tests": "nccl-tests",
    "cuda-p2p": "CUDA samples p2pBandwidthLatencyTest",
    "cuda-bw": "CUDA samples bandwidthTest",
}
KIND_NAMES.update(BEYOND_KIND_NAMES)  # kernel logs, ibstat, ibv_devinfo, ibstatus, systemctl status (importers.beyond)

RECOGNISED = (
    "nvidia-smi (-q, -q -x, topo -m, topo -p2p, nvlink -s, -L, or plain), lspci -vv, nccl-tests, "
    "or CUDA samples (bandwidthTest, p2pBandwidthLatencyTest) output"
)

MATRIX_WORDS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
_GPU_COL = re.compile(r"^GPU\d+$")
_NVLINK_GPU = re.compile(r"^GPU \d+: .*\(UUID: ")
_LSPCI_DEV = re.compile(r"^\s*" + DEV_PREFIX + r"(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7] [^:]+: ")
# "#" optional: GitHub renders a line starting with "#" as a heading, so a paste copied from the page lost them
_NCCL_START = re.compile(
    r"^#?\s*(nThread\s+\d+\s+nGpus|nccl-tests version|Collective test starting|Using devices\s*$|"
    r"size\s+count\s+type\s)"
)
_NCCL_ROW = re.compile(
    r"^\d+\s+\d+\s+"
    r"(?:u?int(?:8|32|64)?|half|float(?:16|32|64)?|double|bfloat16|fp8_e4m3|fp8_e5m2)\s+"
    r"(?:(?:sum|prod|max|min|avg|none|mulsum)\s+)?(?:-?\d+\s+)?\d+(?:\.\d+)?\s+\d+(?:\.\d+)?\s+"
)
_SUMMARY = re.compile(r"^\|\s*NVIDIA-SMI\s+\S+")
_Q_TOP = re.compile(r"^(?:Timestamp|Driver Version)\s+:\s")  # -q pasted without its banner
_Q_GPU = re.compile(r"^GPU [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]\s*$")
_Q_KEY = re.compile(r"^\s+\S.*?\s+:(?:\s|$)")
_LSPCI_FRAGMENT = re.compile(r"^(?:\s+Capabilities: \[[0-9a-fA-F]+\]|\s*(?:LnkCap|LnkSta):\s+(?:Port #|Speed))")


@dataclass
class Section:
    kind: str
    start: int  # 1-based line number of its first line in the file
    lines: list[str] = field(default_factory=list)
    context: list[str] = field(default_factory=list)  # up to 8 lines before it (prompts, commands)
    cut: bool = False  # the file ends inside its last line (no newline after it): that line may be cut short

    @property
    def name(self) -> str:
        return KIND_NAMES.get(self.kind, self.kind)

    @property
    def text(self) -> str:
        """Its lines, ending with a newline unless the file ended mid-line (parsers read that as a possible cut)."""
        return "\n".join(self.lines) + ("" if self.cut else "\n")


def clean_lines(text: str) -> list[str]:
    """Lines without terminal escapes, carriage returns or a byte-order mark."""
    text = text.lstrip("\ufeff")
    return [strip_ansi(line).rstrip("\r") for line in text.splitlines()]


def matrix_header_tokens(line: str) -> list[str] | None:
    """The column names of a ``topo -m``/``-p2p`` header line, or None if the line is not one."""
    s = line.strip()
    if not s.startswith("GPU0"):
        return None
    for w in MATRIX_WORDS:
        s = s.replace(w, w.replace(" ", "_"))
    tokens = s.split()
    if not tokens or any(t in ("X", "OK") for t in tokens):
        return None
    if not all(re.fullmatch(r"[A-Za-z][\w.-]*", t) for t in tokens):
        return None
    return [t.replace("_", " ") if t.replace("_", " ") in MATRIX_WORDS else t for t in tokens]


def _is_matrix_start(lines: list[str], i: int) -> bool:
    if matrix_header_tokens(lines[i]) is None:
        return False
    for nxt in lines[i + 1 : i + 3]:
        if nxt.strip():
            return nxt.strip().startswith("GPU0")
    return False


def _start_kind(lines: list[str], i: int, current: Section | None) -> str | None:
    line = lines[i]
    s = line.strip()
    cur = current.kind if current else None
    if cur == "smi-xml":
        return None  # the XML runs to its closing tag
    if s.startswith("<?xml") or s.startswith("<nvidia_smi_log"):
        return "smi-xml"
    if "NVSMI LOG" in s and s.startswith("="):
        return "smi-q"
    if _SUMMARY.match(s):
        return "smi-summary"
    if (
        cur != "smi-q"
        and (_Q_TOP.match(line) or _Q_GPU.match(line))
        and any(_Q_KEY.match(x) or _Q_TOP.match(x) for x in lines[i + 1 : i + 3])
    ):
        return "smi-q"
    if s.startswith("[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]"):
        return "cuda-p2p"
    if s.startswith(("[CUDA Bandwidth Test]", "CUDA Bandwidth Test] - Starting")):  # its "[" lost in a paste
        return "cuda-bw"
    if _is_matrix_start(lines, i):
        return "topo"  # told apart from -p2p once its rows are read
    if _NVLINK_GPU.match(line) and cur != "nvlink":
        return "nvlink"
    if _LSPCI_DEV.match(line) and cur != "lspci":
        return "lspci"
    if _LSPCI_FRAGMENT.match(line) and cur != "lspci":
        return "lspci"  # lines grepped out of lspci -vv, without their device line
    if cur != "nccl-tests" and _NCCL_ROW.match(s):
        return "nccl-tests"  # a result row whose header the paste cut off
    m = _NCCL_START.match(s)
    if m and cur == "nccl-tests" and i > 0 and lines[i - 1].strip() == s:
        return None  # a line printed twice (two processes writing the same output): the same run
    header = re.compile(r"^#?\s*nThread\s")
    if m and (
        cur != "nccl-tests"
        or (
            m.group(1).startswith(("nThread", "nccl-tests", "Collective"))
            and current is not None
            and any(header.match(x) for x in current.lines)
        )
    ):
        return "nccl-tests"
    return beyond_start_kind(lines, i, cur)


def split_sections(text: str) -> list[Section]:
    """The outputs in ``text``, in order. Lines before the first one (prompts, notes) are dropped."""
    lines = clean_lines(text)
    sections: list[Section] = []
    current: Section | None = None
    for i, line in enumerate(lines):
        kind = _start_kind(lines, i, current)
        if kind is not None:
            current = Section(kind=kind, start=i + 1, context=lines[max(0, i - 8) : i])
            sections.append(current)
        if current is not None:
            current.lines.append(line)
            if current.kind == "smi-xml" and "</nvidia_smi_log>" in line:
                current = Section(kind="_after_xml", start=i + 2)  # swallow nothing; detection resumes
    if sections and current is sections[-1] and lines and lines[-1].strip() and not text.endswith(("\n", "\r")):
        sections[-1].cut = True
    return [_finish(s) for s in sections if s.kind != "_after_xml"]


def _finish(section: Section) -> Section:
    if section.kind == "topo":
        section.kind = "topo-p2p" if _looks_p2p(section.lines) else "topo-m"
    elif section.kind == "nvlink" and not any(
        re.match(r"^\s*Link \d+\s*:", x) or "NVLink" in x or "inactive" in x.lower() for x in section.lines
    ):
        section.kind = "smi-list"
    return section


_P2P_ONLY = {"OK", "CNS", "GNS", "TNS", "NS", "DIS", "U"}
_TOPO_ONLY = re.compile(r"^(NV\d+|PIX|PXB|PHB|NODE|SYS|SOC)$")


def _looks_p2p(lines: list[str]) -> bool:
    header = matrix_header_tokens(lines[0]) or []
    if any(not _GPU_COL.match(t) for t in header):
        return False  # NIC or affinity columns: only topo -m has them
    for line in lines[1:]:
        for tok in line.split()[1:]:
            if tok in _P2P_ONLY:
                return True
            if _TOPO_ONLY.match(tok):
                return False
        if re.match(r"^\s*OK\s+=", line):
            return True
        if re.match(r"^\s*NV#\s+=", line):
            return False
    return False
