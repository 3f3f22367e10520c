"""What a log line looks like, whatever wrote it, and the error lines in a log that no sign of this tool judges.

Logs reach a bug report from a handful of logging libraries, each with its own line prefix: syslog and the
journal (``Mar  3 10:01:02 host tag[pid]:``), ISO 8601 times (Python's logging ``%(asctime)s``, log4j, loguru,
Go's zap and logrus, Kubernetes' klog in JSON), glog and klog (``I1129 10:01:02.123456  4321 file.cc:88]``),
Go's standard log (``2024/01/02 03:04:05``), Python's default ``LEVEL:logger:`` format, vLLM's ``INFO 05-02
08:11:12``, a level in brackets (``[INFO]``, ``[ERROR]``), the kernel's ``[  123.456789]``. A paste whose lines
start that way is a log the user gave, whatever program wrote it: it is read as one (its kernel lines and the
signs this tool knows are judged), never refused as "not recognised".

A log also holds lines that report an error about the GPU stack in words no sign of this tool knows ("GPU 5 fell
off the bus, aborting", "failed to initialize NVML: ERROR_LIBRARY_NOT_FOUND"). Saying "no fault in the logs given"
over them would be a guess; each is kept as an event of kind ``unjudged`` (GA828 lists them, at info), so the
reader is told which lines the tool could not judge.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import KernelEvent

_LEVEL = r"(?:TRACE|DEBUG|INFO|NOTICE|WARN(?:ING)?|ERROR|ERR|FATAL|CRIT(?:ICAL)?|SEVERE|EMERG|ALERT)"
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
# the prefixes of the common logging formats, after an optional "[", "(" or a launcher's tag like "(pid=12) "
LOG_LINE = re.compile(
    r"^\s*(?:\(\w[\w ]{0,40}pid=\d+[^)]{0,60}\)\s+)?[\[(<|]?\s*(?:"
    r"\d{4}[-/.]\d\d[-/.]\d\d[T ]\d\d:\d\d(?::\d\d)?"  # ISO 8601, Go's log, log4j, loguru, Python's asctime
    rf"|{_MONTH}\s+\d{{1,2}},?\s+(?:\d{{4}}\s+)?\d\d:\d\d:\d\d"  # syslog, the journal's short form
    r"|(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun),?\s+(?:\d{1,2}\s+)?" + _MONTH + r"\s"  # ctime, RFC 2822
    r"|[IWEF]\d{4}\s+\d\d:\d\d:\d\d\.\d+\s+\d+\s"  # glog, klog
    rf"|{_LEVEL}\s+\d\d-\d\d\s+\d\d:\d\d:\d\d"  # vLLM's "INFO 05-02 08:11:12"
    rf"|{_LEVEL}:[\w.\-]*:"  # Python logging's default "WARNING:torch.distributed:"
    rf"|{_LEVEL}\s*[\]>|:-]"  # "[INFO] ", "<ERROR>", "ERROR: ", "INFO - "
    rf"|{_LEVEL}\s+\["  # "INFO  [main] ..."
    r"|\d\d:\d\d:\d\d(?:[.,]\d+)?\s"  # a clock time first
    r"|\s*\d+\.\d{3,9}\]"  # the kernel's "[  123.456789]"
    r"|\d{10}(?:\.\d+)?[\]\s]"  # an epoch time
    r")",
    re.IGNORECASE,
)
# a JSON log line (zap, logrus, klog -o json, the device plugin): an object with a level or a message key
_JSON_LINE = re.compile(r'^\s*\{\s*"(?:level|lvl|severity|ts|time|timestamp|msg|message|@timestamp)"\s*:')
_WINDOW = 12  # non-blank lines looked at from a paste's first (a fixed number: the split stays linear)


def is_log_line(line: str) -> bool:
    """A line that starts the way a logging library starts its lines."""
    return bool(LOG_LINE.match(line) or _JSON_LINE.match(line))


def starts_log(lines: list[str], i: int) -> bool:
    """Line ``i`` opens a log: it is a log line, and another log line follows among the next few non-blank ones (a
    traceback or a wrapped message may stand between them), or it is the paste's only line. A title with a date
    over a table (nvidia-smi's banner) is not."""
    if not is_log_line(lines[i]):
        return False
    near = [x for x in lines[i : i + 3 * _WINDOW] if x.strip()][:_WINDOW]
    if len(near) == 1:  # the paste's last non-blank line: a log of its own only when it is the paste's only one
        return not any(x.strip() for x in lines[:i])
    return sum(is_log_line(x) for x in near) >= 2


# -- error lines no sign judges --------------------------------------------------------------------------------

# words that report a failure; "0 errors", "error: 0", "errors=0", "no error", "without error" do not
_FAILURE = re.compile(
    r"\b(?:errors?|failed|failure|fatal|panic|timed out|timeout|unable to|cannot|can't|could not|couldn't"
    r"|fell off|fallen off|not found|lost|abort(?:ed|ing)?|exceeded|unhealthy|crash(?:ed)?|illegal|segfault"
    r"|hang(?:s|ing)?)\b",
    re.IGNORECASE,
)
_NOT_A_FAILURE = re.compile(
    r"\b(?:0|no|zero|without)\s+errors?\b|\berrors?\s*[:=]\s*0\b|\berror[_ ]?(?:handling|correction|checking)\b",
    re.IGNORECASE,
)
# what the failure is about: the GPU stack, its interconnects and its drivers
_SUBJECT = re.compile(
    r"\b(?:GPUs?|CUDA|cu(?:DNN|BLAS)|NVML|NCCL|NVRM|nvidia[\w-]*|NVLink|NVSwitch|S?Xid|mlx[45]_\w+|InfiniBand"
    r"|RDMA|HCAs?|RoCE|fabric ?manager|ECC|HBM|DCGM|GSP|vGPU|MIG|GPUDirect|peermem)\b",
    re.IGNORECASE,
)
# lines every healthy log holds that name a failure and mean none: the kernel taints itself for an out-of-tree or
# unsigned module (the NVIDIA module is both: the kernel's module signing documentation)
_HARMLESS = re.compile(r"module verification failed|out-of-tree module|taints kernel|tainting kernel")
MAX_KEPT = 20  # unjudged lines kept (the first ones); the rest counted in the last one's ``more``
_LONGEST = 2000  # a longer line is not kept whole


_SPAN = 3  # lines of one multi-line message on either side of the line its event is numbered by


def _near(line_no: int, judged: set[int]) -> bool:
    return any(line_no + d in judged for d in range(-_SPAN, _SPAN + 1))


def unjudged(text: str, first: int, judged: set[int]) -> list[KernelEvent]:
    """The lines of ``text`` (its first numbered ``first``) that report a failure of the GPU stack and that no
    event already stands for (``judged``: their line numbers; a message the driver writes over several lines, such
    as "GPU ... has fallen off the bus" under the line that names the GPU, is the event next to it): the first
    :data:`MAX_KEPT`, the others counted."""
    out: list[KernelEvent] = []
    pos, line_no, counted_to = 0, first, 0
    while (m := _FAILURE.search(text, pos)) is not None:
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.end())
        end = len(text) if end < 0 else end
        pos = end + 1
        line_no += text.count("\n", counted_to, start)
        counted_to = start
        line = text[start:end].strip()
        if _near(line_no, judged) or not _SUBJECT.search(line) or _HARMLESS.search(line) or _NOT_A_FAILURE.search(line):
            continue
        if len(out) < MAX_KEPT:
            out.append(KernelEvent(kind="unjudged", text=line[:_LONGEST], line=line_no))
        else:
            out[-1].more += 1
    return out


def settle(events: list[KernelEvent]) -> None:
    """Once every output of an import is merged: an unjudged line next to an event another output's reader took
    (a relayed Xid, a lost GPU's line read by its own row) is that event's, not a line of its own."""
    judged = {e.line for e in events if e.kind != "unjudged" and e.line is not None}
    events[:] = [e for e in events if e.kind != "unjudged" or e.line is None or not _near(e.line, judged)]
