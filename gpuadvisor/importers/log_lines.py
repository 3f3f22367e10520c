"""What a log line looks like, whatever wrote it, and the error lines in a log that no sign of this tool judges.

Logs reach a bug report from a handful of logging libraries, each with its own line prefix: syslog and the
journal (``Mar  3 10:01:02 host tag[pid]:``), ISO 8601 times (Python's logging ``%(asctime)s``, log4j, loguru,
Go's zap and logrus, Kubernetes' klog in JSON), glog and klog (``I1129 10:01:02.123456  4321 file.cc:88]``),
Go's standard log (``2024/01/02 03:04:05``), logrus' and slog's key=value text (``time="2021-05-12T17:31:12Z"
level=error msg="..."``), Python's default ``LEVEL:logger:`` format, vLLM's ``INFO 05-02
08:11:12``, a level in brackets (``[INFO]``, ``[ERROR]``), the kernel's ``[  123.456789]``. A paste whose lines
start that way is a log the user gave, whatever program wrote it: it is read as one (its kernel lines and the
signs this tool knows are judged), never refused as "not recognised".

Its error lines about the GPU stack that no sign judges are listed (probes/kmsg_unjudged.py, GA828).
"""

from __future__ import annotations

import re

from gpuadvisor.probes.kmsg_unjudged import names_gpu_stack

_LEVEL = r"(?:TRACE|DEBUG|INFO|NOTICE|WARN(?:ING)?|ERROR|ERR|FATAL|CRIT(?:ICAL)?|SEVERE|EMERG|ALERT)"
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
# the prefixes of the common logging formats, after an optional "[", "(" or a launcher's tag like "(pid=12) " (one
# run of white space before each part: a line of spaces must not be tried every way it splits, cubic in its length)
LOG_LINE = re.compile(
    r"^\s*(?:\(\w[\w ]{0,40}pid=\d+[^)]{0,60}\)\s+)?(?:[\[(<|]\s*)?(?:"
    r"\d{4}[-/.]\d\d[-/.]\d\d[T ]\d\d:\d\d(?::\d\d)?"  # ISO 8601, Go's log, log4j, loguru, Python's asctime
    rf"|{_MONTH}\s+\d{{1,2}},?\s+(?:\d{{4}}\s+)?\d\d:\d\d:\d\d"  # syslog, the journal's short form
    r"|(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun),?\s+(?:\d{1,2}\s+)?" + _MONTH + r"\s"  # ctime, RFC 2822
    r"|[IWEF](?:\d{4})?\d{4}\s+\d\d:\d\d:\d\d\.\d+\s+\d+\s"  # glog, klog (glog 0.7: the year too, I20260203)
    rf"|{_LEVEL}\s+\d\d-\d\d\s+\d\d:\d\d:\d\d"  # vLLM's "INFO 05-02 08:11:12"
    rf"|{_LEVEL}:[\w.\-]*:"  # Python logging's default "WARNING:torch.distributed:"
    rf"|{_LEVEL}\s*[\]>|:-]"  # "[INFO] ", "<ERROR>", "ERROR: ", "INFO - "
    rf"|{_LEVEL}\s+\["  # "INFO  [main] ..."
    r"|\d\d:\d\d:\d\d(?:[.,]\d+)?\s"  # a clock time first
    r"|\d+\.\d{3,9}\]"  # the kernel's "[  123.456789]" (its spaces taken after the bracket)
    r"|\d{10}(?:\.\d+)?[\]\s]"  # an epoch time
    r'|time="?\d{4}-\d\d-\d\dT\d\d:\d\d'  # logrus' text form (time="..." level=error msg="..."), slog's text
    rf"|level={_LEVEL}\s+msg="  # logrus' text form without its time
    r")",
    re.IGNORECASE,
)
# a JSON log line (zap, logrus, klog -o json, the device plugin): an object with a level or a message key
_JSON_LINE = re.compile(r'^\s*\{\s*"(?:level|lvl|severity|ts|time|timestamp|msg|message|@timestamp)"\s*:')
_WINDOW = 12  # non-blank lines looked at from a paste's first (a fixed number: the split stays linear)
_ABOUT = 400  # lines looked at for one that names the GPU stack (a fixed number, for the same reason)


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
        return not any(x.strip() for x in lines[:i]) and names_gpu_stack(near[0])
    # a log of something else (a backup job's) holds nothing for this tool: one line near the top names the GPU stack
    return sum(is_log_line(x) for x in near) >= 2 and _names_near(lines, i)


class _Scan:
    """Where the paste being split next names the GPU stack, found once per line: the splitter asks of successive
    lines of one list, and a window searched afresh for each would cost _ABOUT times the lines."""

    lines: list[str] | None = None  # the list scanned (held, so that its identity cannot be another list's)
    upto = 0  # lines before this index are scanned
    hits: list[int] = []  # the indexes scanned that name the GPU stack, in order


def forget() -> None:
    """Drop the scan of the paste being split (asked about lines out of order, it would answer from a stale one)."""
    _Scan.lines, _Scan.upto, _Scan.hits = None, 0, []


def _names_near(lines: list[str], i: int) -> bool:
    """A line among ``lines[i : i + _ABOUT]`` names the GPU stack."""
    if _Scan.lines is not lines or i < _Scan.upto - _ABOUT:
        _Scan.lines, _Scan.upto, _Scan.hits = lines, i, []
    start = max(i, _Scan.upto)
    for k in range(start, min(i + _ABOUT, len(lines))):
        if names_gpu_stack(lines[k]):
            _Scan.hits.append(k)
    _Scan.upto = max(_Scan.upto, min(i + _ABOUT, len(lines)))
    while _Scan.hits and _Scan.hits[0] < i:
        _Scan.hits.pop(0)
    return bool(_Scan.hits) and _Scan.hits[0] < i + _ABOUT
