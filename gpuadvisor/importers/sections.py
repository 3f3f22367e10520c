"""Cut a text into the command outputs it holds, each named by what printed it.

People paste several outputs into one file (``nvidia-smi; nvidia-smi -q; nvidia-smi topo -m``), with shell
prompts between them. Each output is recognised by its own first line, never by the file name: the detectors
of :mod:`gpuadvisor.importers.registry`'s rows are tried on each line, in the rows' order (the table of what
each one starts with is in the README, made from the rows).
"""

from __future__ import annotations

import re

from gpuadvisor.importers.foreign_log import other_vendor_log
from gpuadvisor.importers.fragments import LSPCI_BUS_ID
from gpuadvisor.importers.registry import BY_KIND, FORMATS
from gpuadvisor.importers.section import Section, clean_lines
from gpuadvisor.importers.sift import Sift, sift
from gpuadvisor.importers.values import is_elision


def _start_kind(lines: list[str], i: int, current: Section | None, sifted: Sift) -> str | None:
    if current is not None and current.kind in BY_KIND and BY_KIND[current.kind].ends is not None:
        return None  # an output that runs to its closing line (XML, JSON)
    rows = FORMATS if current is None else sifted.rows(lines[i])  # inside an output: the rows this line could start
    return next((f.kind for f in rows if f.starts is not None and f.starts(lines, i, current)), None)


_FENCE = re.compile(r"^\s*`{3,}\s*$")
_OPENING_FENCE = re.compile(r"^\s*`{3,}[\w.+-]+\s*$")  # "```bash": a fence with a language only opens


def split_sections(text: str) -> list[Section]:
    """The outputs in ``text``, in order. Lines before the first one (prompts, notes) are dropped."""
    lines = clean_lines(text)
    sections: list[Section] = []
    current: Section | None = None
    sifted = sift(text)
    fenced = False  # inside a markdown fence: fences open and close in turn
    closed: Section | None = None  # the output the last fence closed, while only glue lines follow it
    for i, line in enumerate(lines):
        bare_fence = _FENCE.match(line) is not None
        fenced = True if _OPENING_FENCE.match(line) else fenced ^ bare_fence
        if current is not None and current.kind != "_after" and bare_fence:
            # a markdown fence closes the output it wraps, the one that ends the text too: the paste ends there, and
            # the line above it is whole (the writer closed the fence under it), not a line a file's end cut short
            closed, current = current, Section(kind="_after", start=i + 2)
            continue
        kind = _start_kind(lines, i, current, sifted)
        if closed is not None and _goes_on(lines, i, kind, closed, sifted):
            # the fences around two blocks of one output (nvlink -s -i 2, then -i 3) are noise: read on as unfenced
            closed.lines.extend(
                "" if _FENCE.match(x) or x.lstrip().startswith("```") else x
                for x in lines[len(closed.lines) + closed.start - 1 : i]
            )
            current, kind, closed = closed, None, None
        elif kind is not None or (line.strip() and not _GLUE.match(line)):
            closed = None
        if kind is not None:
            current = Section(kind=kind, start=i + 1, context=lines[max(0, i - 8) : i])
            sections.append(current)
        if current is not None:
            current.lines.append(line)
            ends = BY_KIND[current.kind].ends if current.kind in BY_KIND else None
            if ends is not None and ends(line):
                current = Section(kind="_after", start=i + 2)  # swallow nothing; detection resumes
    if sections and current is sections[-1] and lines and lines[-1].strip() and not text.endswith(("\n", "\r")):
        sections[-1].cut = True
    if sections and current is sections[-1] and fenced:  # the fence around the last output never closes
        sections[-1].open_end = True
    for s in sections:
        settle = BY_KIND[s.kind].settle
        if settle is not None:
            s.kind = settle(s)
    return sections


def _goes_on(lines: list[str], i: int, kind: str | None, closed: Section, sifted: Sift) -> bool:
    """Whether line ``i``, the first after a fence closed ``closed`` with only glue between, starts an output of
    ``closed``'s kind that the same lines unfenced read as ``closed``'s own next rows."""
    return kind == closed.kind and _start_kind(lines, i, closed, sifted) is None


# A shell prompt and its command ("$ nvidia-smi topo -m", "root@gpu01:~# lspci -vv", "(venv) PS C:\\> nvidia-smi",
# bash's and csh's "[user@host dir]$ nvidia-smi", a space in the brackets as section.shell_prompt takes it),
# a markdown fence or rule, or a quote marker alone: the glue between pasted outputs, never an output itself.
_GLUE = re.compile(
    r"^\s*(?:(?:\([^)]{0,40}\)\s*)?(?:PS\s+)?(?:\[[^\]]{0,80}\] ?|[\w.@~:/\\\[\]+-]{0,200})[$#%>]\s*(?:\S.*)?"
    r"|`{3,}.*|[-=*_~+|]{3,}|>"
    r"|(?:[^\s❯➜»λ][^❯➜»λ]{0,80}\s)?[❯➜»λ]{1,3}\s.*"  # zsh themes' prompts (starship's 'dir on Fedora ❯ command', ➜)
    r"|(?:sudo\s+)?(?:nvidia-smi|lspci|ibstat|ibstatus|ibv_devinfo|dmesg|journalctl|lsblk|nvme|fio|cat|grep|mpirun|"
    r"srun|numactl|rdma|lsmod|systemctl|nvbandwidth|dcgmi|curl|kubectl|\.{0,2}/\S*|\S*_perf)(?:\s.*)?"
    r"|(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}\s*"  # nvidia-smi's date line
    r"|={3,} .{1,200} ={3,}\s*)$"  # a script's banner between its steps: "===== node01 | before | <time> ====="
)
_FOREIGN = (
    # its banner or closing line, or (pasted from mid-output) its per-GPU rows ("GPU[0]\t\t: Serial Number: N/A")
    # and its section banners ("===== KFD Processes =====")
    (
        re.compile(
            r"ROCm System Management Interface|End of ROCm SMI Log|^\s*=+ ROCm SMI|^\s*GPU\[\d{1,3}\]\t*\s*: \S"
            r"|^\s*=+ (?:KFD Processes|GPUs Indexed by PID|Current voltage|Firmware Information) =+\s*$",
            re.M,
        ),
        "rocm-smi",
    ),
    (re.compile(r"^\s*(?:AMD SMI|amd-smi)\b|^\s*\|\s*AMD-SMI ", re.M), "amd-smi"),
    (re.compile(r"^\s*ROCk module (?:version .* )?is loaded|HSA System Attributes", re.M), "rocminfo"),
    # Habana's (Intel Gaudi's) hl-smi prints nvidia-smi's table with its own banner ("| HL-SMI Version: hl-1.13.0 |")
    # and AIP for GPU; Intel's xpu-smi its own boxes ("| Device ID | Device Information |") and banner
    (re.compile(r"^\s*\|\s*HL-SMI Version:|^\s*\|\s*AIP\s+Name\s", re.M), "hl-smi"),
    (re.compile(r"^\s*(?:xpu-smi\b|XPU-SMI\b)|Intel\(R\) (?:Data Center|Arc)\b[^\n]{0,60}\bGPU", re.M), "xpu-smi"),
)
# the vendor whose tool each is (the refusal names it)
_VENDOR = {"hl-smi": "Intel Gaudi (Habana)", "xpu-smi": "Intel"}
# tools whose table looks like nvidia-smi's: refused by their banner even where a reader took rows of it
_LOOKALIKE = ("hl-smi",)


# an lspci line of another vendor's GPU: "2f:00.0 VGA compatible controller: Advanced Micro Devices, Inc. [AMD/ATI] ..."
_OTHER_GPU = re.compile(
    rf"^\s*{LSPCI_BUS_ID} (?:VGA compatible|3D|Display) controller[^:]*: "
    r"(Advanced Micro Devices|AMD|ATI|Intel|Matrox|ASPEED|Moore Threads|Huawei)\b",
    re.M,
)


# any lspci device line: "01:00.0 Processing accelerators: Device 1e52:b140"
_ACCELERATOR_CLASSES = ("VGA compatible controller", "3D controller", "Display controller", "Processing accelerators")
_ANY_DEVICE = re.compile(rf"^\s*{LSPCI_BUS_ID} ([^:\n]+): (.{{0,60}})", re.M)


def other_vendor_gpu(text: str, lspci_only: bool = False) -> str | None:
    """Why an lspci paste with nothing NVIDIA in it is refused: it shows another vendor's GPU, or (``lspci_only``:
    every output read is lspci) only other vendors' devices."""
    if "NVIDIA" in text or "10de:" in text.lower():
        return None
    if (m := _OTHER_GPU.search(text[: 2**20])) is not None:
        return (
            f"lspci shows another vendor's GPU ({m.group(1)}) and no NVIDIA device: gpuadvisor reads NVIDIA GPUs only"
        )
    for d in _ANY_DEVICE.finditer(text[: 2**20]) if lspci_only else ():
        cls, desc = d.group(1).strip(), d.group(2).strip()
        if cls in _ACCELERATOR_CLASSES or "[AMD/ATI]" in desc:  # another vendor's accelerator, or a part of its GPU
            return (
                f"lspci shows another vendor's accelerator ({cls}: {desc!r}) and no NVIDIA device: gpuadvisor reads "
                "NVIDIA GPUs only"
            )
    return None  # a NIC, a RAID controller ...: an NVIDIA host's other device, read with a note


def not_nvidia(text: str, gpus_read: bool = False) -> str | None:
    """Why a text that holds no NVIDIA output is refused, when it holds another vendor's (rocm-smi, amd-smi, its
    driver's kernel log). Where a reader took GPUs from it (``gpus_read``), only a tool whose table looks like
    nvidia-smi's is: otherwise it is an NVIDIA paste that never names NVIDIA, beside another tool's lines."""
    for pattern, tool in _FOREIGN:
        if (not gpus_read or tool in _LOOKALIKE) and pattern.search(text[: 2**20]):
            return (
                f"{tool} output (an {_VENDOR.get(tool, 'AMD')} GPU tool): gpuadvisor reads NVIDIA GPUs' outputs only "
                "(nvidia-smi, lspci, nccl-tests)"
            )
    return None if gpus_read else other_vendor_log(text[: 2**20])  # amdgpu's kernel log, AMD's GPU's


def unread(text: str, sections: list[Section] | None = None, said: set[int] | None = None) -> list[tuple[str, str]]:
    """The ranges of lines no output claims (``("lines 3-5", first line)``), prompts, fences and blanks aside;
    ``said``: line numbers the parsers read as context (an error nvidia-smi printed above its table)."""
    sections = split_sections(text) if sections is None else sections
    lines = clean_lines(text)
    claimed = bytearray(len(lines) + 1)
    for s in sections:
        claimed[s.start - 1 : s.start - 1 + len(s.lines)] = b"\x01" * len(s.lines)
    for n in said or ():
        if 0 < n <= len(lines):
            claimed[n - 1] = 1
    spans: list[tuple[str, str]] = []
    run: list[int] = []
    for i, line in enumerate([*lines, None]):
        unclaimed = line is not None and not claimed[i]
        if unclaimed and line is not None and (not line.strip() or _GLUE.match(line) or is_elision(line)):
            continue  # glue does not end a run, nor start one
        if unclaimed:
            run.append(i)
            continue
        if run:
            span = f"line {run[0] + 1}" if len(run) == 1 else f"lines {run[0] + 1}-{run[-1] + 1}"
            spans.append((span, " ".join(lines[run[0]].split())[:50]))
            run = []
    return spans
