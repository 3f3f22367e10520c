"""Error lines about the GPU stack in a kernel or service log that no sign of this tool's catalog judges.

A log holds lines that report a failure in words no sign knows ("GPU 5 fell off the bus, aborting", "failed to
initialize NVML: ERROR_LIBRARY_NOT_FOUND", an NVRM message a newer driver added). Saying "no fault in the logs
given" over them would be a guess: each is kept as an event of kind ``unjudged`` (GA828 lists them, at info), so the
reader is told which lines the tool could not judge. A log given to ``import`` is read whole for them; the live
probe reads the NVIDIA driver's own lines (``NVRM``, ``nvidia*``), the only ones it looks at besides the signs.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import KernelEvent

from .kmsg_signs import SIGN_RE

# words that report a failure (found lower-cased with str.find, then as whole words by _FAILURE): "0 errors",
# "error: 0", "errors=0", "no error", "without error" do not
_WORDS = (
    "error",
    "fail",
    "fatal",
    "panic",
    "timed out",
    "timeout",
    "unable to",
    "cannot",
    "can't",
    "could not",
    "couldn't",
    "fell off",
    "fallen off",
    "not found",
    "lost",
    "abort",
    "exceeded",
    "unhealthy",
    "crash",
    "illegal",
    "segfault",
)
_FAILURE = re.compile(
    r"\b(?:errors?|failed|failure|fatal|panic|timed out|timeout|unable to|cannot|can't|could not|couldn't"
    r"|fell off|fallen off|not found|lost|abort(?:ed|ing)?|exceeded|unhealthy|crash(?:ed)?|illegal|segfault)\b",
    re.IGNORECASE,
)
_NOT_A_FAILURE = re.compile(
    r"\b(?:0|no|zero|without)\s+errors?\b|\berrors?\s*[:=]\s*0\b|\berror[_ ]?(?:handling|correction|checking)\b",
    re.IGNORECASE,
)
# what the failure is about: the GPU stack, its interconnects and its drivers
_SUBJECT = re.compile(
    r"\b(?:GPUs?\d{0,3}|CUDA|cu(?:DNN|BLAS)|NVML|NCCL|NVRM|nvidia[\w-]*|NVLink|NVSwitch|S?Xid|mlx[45]_\w+|InfiniBand"
    r"|RDMA|HCAs?|RoCE|fabric ?manager|ECC|HBM|DCGM|(?:nv-)?host ?engine|GSP|vGPU|MIG|GPUDirect|peermem)\b"
    r"|(?-i:\bnccl[A-Z]\w*|\bCUDA_ERROR_[A-Z_]+|\bcuvid[A-Z]\w*)",  # NCCL's, the driver API's, NVDEC's names
    re.IGNORECASE,
)
# lines every healthy log holds that name a failure and mean none: the kernel taints itself for an out-of-tree or
# unsigned module (the NVIDIA module is both: the kernel's module signing documentation)
# A command's usage error ("ERROR: Option -m is missing its value. Please run 'nvidia-smi -h' for help.") is the
# command line's fault, not the GPU stack's.
_HARMLESS = re.compile(
    r"module verification failed|out-of-tree module|taints kernel|tainting kernel"
    r"|missing its value|-h' for help|--help' for|[Uu]nrecognized option|[Ii]nvalid combination of input arguments"
)
MAX_KEPT = 20  # unjudged lines kept (the first ones); the rest counted in the last one's ``more``
_LONGEST = 2000  # a longer line is not kept whole
# a log up to this size is read whole for failure lines (a pass per word: about 1 s for 80 MB); a longer one, a whole
# node's log rather than a paste, for its NVIDIA driver's lines only (two passes), as the live probe reads it
WHOLE_UP_TO = 8 * 2**20


_SPAN = 8  # lines of one report either side of its event's line (a GSP boot failure: 4 NVRM lines above it)
# the NVIDIA driver's own lines in the kernel log: what the live probe reads for unjudged failures (a node's kernel log
# holds other drivers' errors, which are not this tool's to list)
_DRIVER = ("NVRM", "nvidia")


def _near(line_no: int, judged: set[int]) -> bool:
    return any(line_no + d in judged for d in range(-_SPAN, _SPAN + 1))


def _lines_holding(text: str, words: tuple[str, ...], first: int, where: str | None = None) -> list[tuple[int, str]]:
    """(number, line) of each line of ``text`` (its first numbered ``first``) that holds one of ``words`` in
    ``where`` (``text`` itself, or a copy of it of the same length, lower-cased), in order: a str.find pass per word
    (C speed; no per-line Python work on the lines that hold none)."""
    where = text if where is None else where
    starts: set[int] = set()
    for word in words:
        pos = 0
        while (hit := where.find(word, pos)) >= 0:
            starts.add(where.rfind("\n", 0, hit) + 1)
            end = where.find("\n", hit)
            pos = len(where) if end < 0 else end + 1
    out: list[tuple[int, str]] = []
    number, counted = first, 0
    for start in sorted(starts):
        number += text.count("\n", counted, start)
        counted = start
        end = text.find("\n", start)
        out.append((number, text[start : len(text) if end < 0 else end].strip()))
    return out


def _failure(line: str, subject: bool) -> bool:
    """A line that reports a failure (of the GPU stack: ``subject``) and is not one of the catalog's own (an Xid or
    SXid line, a sign's line: judged even where a long log keeps only the first and last few of its events)."""
    if not _FAILURE.search(line) or _HARMLESS.search(line) or _NOT_A_FAILURE.search(line):
        return False
    if "Xid" in line or SIGN_RE.search(line):
        return False
    return not subject or _SUBJECT.search(line) is not None


def _keep(out: list[KernelEvent], number: int, line: str) -> None:
    if len(out) < MAX_KEPT:
        out.append(KernelEvent(kind="unjudged", text=line[:_LONGEST], line=number))
    else:
        out[-1].more += 1


def unjudged(text: str, first: int, judged: set[int], *, driver_only: bool = False) -> list[KernelEvent]:
    """The lines of ``text`` (its first numbered ``first``) that report a failure of the GPU stack and that no
    event already stands for (``judged``: their line numbers; a message the driver writes over several lines, such
    as "GPU ... has fallen off the bus" under the line that names the GPU, is the event next to it): the first
    :data:`MAX_KEPT`, the others counted. ``driver_only``: a kernel log, read for the NVIDIA driver's own lines as
    the live probe and a streamed log read it."""
    out: list[KernelEvent] = []
    if driver_only or len(text) > WHOLE_UP_TO:  # a kernel log, or a whole node's: its NVIDIA driver's lines
        return [e for e in _driver_lines(text, first) if not _near(e.line or 0, judged)]
    low = text.lower()
    if len(low) != len(text):  # a character whose lower case is longer (rare): the words in their usual cases
        words, low = (*_WORDS, *(w.capitalize() for w in _WORDS), *(w.upper() for w in _WORDS)), text
    else:
        words = _WORDS
    for number, line in _lines_holding(text, words, first, low):
        if not _near(number, judged) and _failure(line, subject=True):
            _keep(out, number, line)
    return out


def settle(events: list[KernelEvent]) -> None:
    """Once every output of an import is merged: an unjudged line next to an event another output's reader took
    (a relayed Xid, a lost GPU's line read by its own row) is that event's, not a line of its own."""
    judged = {e.line for e in events if e.kind != "unjudged" and e.line is not None}
    events[:] = [e for e in events if e.kind != "unjudged" or e.line is None or not _near(e.line, judged)]


class DriverLines:
    """The NVIDIA driver's lines of a live kernel log that report a failure no sign judges, read block by block
    (bounded: the first :data:`MAX_KEPT` kept, the others counted)."""

    def __init__(self) -> None:
        self.kept: list[KernelEvent] = []

    def feed(self, text: str, first: int) -> None:
        """One block of whole lines, its first numbered ``first``."""
        for number, line in _lines_holding(text, _DRIVER, first):
            if _failure(line, subject=False):
                _keep(self.kept, number, line)


def _driver_lines(text: str, first: int) -> list[KernelEvent]:
    reader = DriverLines()
    reader.feed(text, first)
    return reader.kept


def reports_failure(line: str) -> bool:
    """A line that reports a failure of the GPU stack (what GA828 lists when no sign judges it); a comment or a
    heading ("# note: ... 'error' instead of '#wrong'") reports none."""
    return len(line) < _LONGEST and not line.lstrip().startswith("#") and _failure(line, subject=True)


def names_gpu_stack(line: str) -> bool:
    """A line that names the GPU stack (a GPU, CUDA, NVML, NCCL, the NVIDIA driver, an RDMA adapter, ...)."""
    return _SUBJECT.search(line) is not None
