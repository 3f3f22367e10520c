"""Outputs whose every line carries the same kind of prefix a launcher or log collector adds: ``mpirun
--tag-output`` (``[1,0]<stdout>:``), ``kubectl logs --timestamps`` (``2024-05-01T12:00:00.123456789Z ``),
``kubectl logs --prefix`` (``[pod/NAME/CONTAINER] ``) and stern (``POD CONTAINER ``), ``pdsh`` (``node01: ``, or
the host's address: ``10.0.87.143: ``, doubled where two launchers each added it). The prefix is taken off
every line (line numbers kept) so that the output under it reads as printed; in a paste indented as a whole (a markdown
list item's lines), after the indent. Kernel logs keep theirs (their readers
use the timestamps) but for a host's address and a pod's name (a GPU operator driver container's "Kernel
messages:"): no kernel message starts with one."""

from __future__ import annotations

import os.path
import re

from gpuadvisor.importers.section import shell_prompt
from gpuadvisor.probes.kmsg_signs import BSD_MLX

_COMPOSE = "docker compose's service name"
# docker compose's own lines between its services' output (v1: "Recreating frigate ... done", "Attaching to frigate",
# "gpu_test_1 exited with code 0";
# v2: "[+] Running 2/2", " ✔ Container frigate  Started", "Network app_default  Created")
_COMPOSE_OWN = re.compile(
    r"^\s*(?:(?:Creating|Recreating|Starting|Stopping|Restarting) [\w.-]{1,64} \.\.\. (?:done|error)"
    r"|Attaching to [\w., -]{1,200}|\[\+\] Running \d+/\d+|Creating network \"[\w.-]{1,64}\" with the \w+ driver"
    r"|[\w.-]{1,64} exited with code \d{1,3}"
    r"|\S?\s*(?:Container|Network|Volume) [\w.-]{1,64}\s+"
    r"(?:Created|Creating|Started|Starting|Running|Recreated|Stopped))\s*$"
)
_PREFIXES = (
    ("mpirun --tag-output", re.compile(r"^\[\d+,\d+\]<(?:stdout|stderr)>:")),
    # mpirun --timestamp-output --tag-output: "Fri Aug 11 12:31:45 2023[1,0]<stdout>:"
    (
        "mpirun --timestamp-output",
        re.compile(
            r"^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}(?:\[\d+,\d+\]<\w+>:)?"
        ),
    ),
    # "2019-06-02T16:13:44.884Z: ", "[2025-11-09 07:39:30] ", a collector's "2025-11-09 15:39:31.043 +08:00 "
    (
        "timestamps",
        re.compile(r"^(\[)?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z| ?[+-]\d\d:?\d\d)?(?(1)\]):? ?"),
    ),
    # a log viewer's time column (CloudWatch, SageMaker): "  | 2024-11-28T07:42:11.527Z | "
    ("a log viewer's time column", re.compile(r"^\s*\|\s*\d{4}-\d\d-\d\d[T ][\d:.,]+Z?\s*\|\s?")),
    # Ray's worker prefix: "(pid=909608) ", "(RayWorkerWrapper pid=123, ip=10.0.0.2) "; SkyPilot's (Ray's, with its
    # task and node names): "(sky-cmd, pid=13008) ", "(node-0, worker1, rank=1, pid=22755, ip=172.31.81.91) "
    ("Ray's worker prefix", re.compile(r"^\((?:[\w.-]+,? )*(?:rank=\d+, )?pid=\d+(?:, ip=[\w.:-]+)?\) ?")),
    # a pod's container logs: kubectl logs --prefix "[pod/nvidia-driver-daemonset-c78b4/nvidia-driver-ctr] ", stern's
    # "nvidia-driver-daemonset-c78b4 nvidia-driver-ctr " (a pod name ends in its generated suffix: "-c78b4",
    # "-7d9f8b6c4-x2x7q"; a container's name is a DNS label)
    (
        "a pod's and container's names",
        re.compile(
            r"^(?:\[pod/([a-z0-9][a-z0-9.-]{0,200}-[a-z0-9]{5})/([a-z0-9][a-z0-9-]{0,62})\]"
            r"|([a-z0-9][a-z0-9.-]{0,200}-[a-z0-9]{5})[ \t]([a-z0-9][a-z0-9-]{0,62}))(?:[ \t]|(?=\s*$))"
        ),
    ),
    # node01, gpu-3 (a word with a digit); an IPv4 address (pdsh -w 10.0.87.143, DeepSpeed's pdsh runner), each
    # possibly twice ("10.0.87.143: 10.0.87.143: ": a launcher's output relayed by another that prefixes it again)
    ("a host's address", re.compile(r"^(\d{1,3}(?:\.\d{1,3}){3})(?:: \1)*: ")),
    ("a host name", re.compile(r"^([A-Za-z][\w.-]{0,62}\d[\w.-]{0,62})(?:: \1)*: ")),
    # docker compose's service name, padded to the longest ("frigate    | "): its own status lines ("Attaching to
    # frigate", "Recreating frigate ... done", "Container frigate  Started") carry none (see _COMPOSE_OWN)
    (_COMPOSE, re.compile(r"^([a-z0-9][a-z0-9_.-]{0,62}(?:-\d{1,3})?)[ \t]+\| ?")),
    # srun --label: the task's number ("0: ", " 3: ", padded to the widest task number); ip -o's interface
    # index ("2: eth0: <BROADCAST,...>", "2: eth0    inet 10.0.0.2/24") is not one (see _IP_ONELINE)
    ("srun's task label", re.compile(r"^ {0,5}\d{1,6}: (?=\S)")),
)
# prefixes that name where a line came from (a host, a compose service): one source's lines are one output
_SOURCES = ("a host's address", "a host name", _COMPOSE)
_SRUN = "srun's task label"
# a syslog line after its time (rsyslog's RFC 3339 form: "2025-08-16T00:03:03.959639-04:00 localhost systemd[1]: "):
# the time is the log's own, its reader keeps it (as a kernel log's)
_SYSLOG_REST = re.compile(r"^[\w.-]{1,63} [\w.@/()-]{1,64}(?:\[\d{1,10}\])?: ")
# (and rdma res's device indexes: "0: mlx5_0: pd 2 cq 3 qp 1 ...")
_IP_ONELINE = re.compile(r"^[\w.@:-]+:? +(?:<[A-Z0-9_,-]*>|inet6? |link/)|^[\w.-]+: (?:pd|cq|qp|cm_id|mr|ctx|srq) \d")
_POD = "a pod's and container's names"
# a pod's line a terminal overwrote with a progress bar (the driver container's "Building kernel modules" bar: its
# carriage returns lost in the copy, the line starts with the bar's own indented text), carrying no prefix
_OVERWRITTEN = re.compile(r"^\s+:?\s*\[[#= ]+\]")
# an NCCL line names its own host ("host:pid:tid [rank] NCCL ..."): several hosts' lines of it interleaved are one log
_NCCL = re.compile(r"^\s*[^\s:]+:\d+:\d+ \[\d+\] ")
_KERNEL = re.compile(r"\bkernel:|\bNVRM\b|\bXid\b")  # and FreeBSD's "mlx5_core0: ": a device, not a host
_FENCE = re.compile(r"^\s*(?:`{3,}|~{3,})")


# what a paste carries around the prefixed lines and does not prefix: a quote's marks ("> ", "% ") before them, a
# shell prompt with its command above them
_QUOTE = re.compile(r"^(?:[ \t]*[>%](?: |$))+")
_PROMPT = shell_prompt(bare="$#")
_COMMAND = shell_prompt()  # a prompt with its command ("user@host:~$ nvidia-smi"), "#" only after the prompt's text


# a line that is all one inline code span of Markdown (a post quoting a log line: "`nv-fabricmanager[12]: ...`."),
# a full stop or comma after it: what is inside (a fence's "```" opens no span: a span holds no backtick)
_INLINE = re.compile(r"^((?:[ \t]*[>%] )*[ \t]*)`([^`\n]+)`[.,;:!]?[ \t]*(?=\r?$)", re.M)  # a quote's marks kept
# a paste wrapped in ONE inline code span across lines, as a fence: a backtick glued before its first line (a prompt)
# and after its last ("`user@host:~$ nvcc --version" ... "V8.0.62`"), no backtick between them
_SPAN_OPEN = re.compile(r"^((?:[ \t]*[>%] )*[ \t]*)`(?=[^`\s])([^`]*)$")
_SPAN_CLOSE = re.compile(r"^([^`]*[^`\s])`[.,;:!]?[ \t]*(\r?\n?)$")


def _unspanned(text: str) -> str:
    """``text`` without the one inline code span wrapped around lines of it (its opening backtick glued to a line's
    start, its closing one to the end of the next line holding a backtick); linear in the text."""
    lines = text.splitlines(keepends=True)
    k = 0
    while k < len(lines):
        if (m := _SPAN_OPEN.match(lines[k])) is None:
            k += 1
            continue
        j = next((j for j in range(k + 1, len(lines)) if "`" in lines[j]), None)
        if j is None:
            break
        if (e := _SPAN_CLOSE.match(lines[j])) is not None:
            lines[k], lines[j] = m.group(1) + m.group(2), e.group(1) + e.group(2)
        k = j + 1
    return "".join(lines)


def strip_prefix(text: str) -> tuple[str, str | None]:
    """``text`` without the prefix every non-blank line of it carries (and the prefix's kind), or as it was. Fence
    lines, a prompt line, a quote's marks and a last line the paste ends inside (too short to hold the whole prefix)
    need not carry it. A line in inline code marks (`...`), or lines wrapped in one span, are read as what is inside."""
    if "`" in text:
        text = _unspanned(_INLINE.sub(r"\1\2", text))
    lines = text.splitlines(keepends=True)
    cut = bool(lines) and not text.endswith(("\n", "\r"))
    bodies = [(k, x[m.end() :] if (m := _QUOTE.match(x)) else x) for k, x in enumerate(lines)]
    shown = [b for k, b in bodies if _carries(b) and not (cut and k == len(lines) - 1)]
    if len(shown) < 3:
        return text, None
    if (numbered := _gutter(bodies, lines, cut)) is not None:
        return numbered, "an editor's line numbers"
    indent = _indent(shown)  # a paste indented as a whole (a list item's): the prefix follows the indent
    shown = [b[len(indent) :] for b in shown]
    kernel = any(_KERNEL.search(x) or BSD_MLX.match(x) for x in shown)
    for what, pattern in _PREFIXES:
        if kernel and what not in ("a host's address", _POD, _SRUN):
            continue
        found = [pattern.match(x) for x in shown]
        if what == _POD:
            found = _pod_lines(found, shown)
        if not found or not all(found):
            continue
        if what == "timestamps" and all(
            _SYSLOG_REST.match(x[m.end() :]) for x, m in zip(shown, found, strict=True) if m
        ):
            continue  # a service log's own times
        if what == _SRUN and any(_IP_ONELINE.match(x[m.end() :]) for x, m in zip(shown, found, strict=True) if m):
            continue  # ip -o's interface indexes (rdma res's device indexes), not task numbers
        several = what in _SOURCES and len({m.group(1) for m in found if m}) != 1
        if several and (kernel or not _nccl_log(shown, found)):
            continue  # one source's lines only; several interleaved are not one output (but an NCCL log)
        dedented = [(b, b[len(indent) :] if b.startswith(indent) else b) for _, b in bodies]
        out = [
            _rebuilt(line, body, pattern.sub("", inner, count=1)) if inner.strip() and pattern.match(inner) else line
            for (body, inner), line in zip(dedented, lines, strict=True)
        ]
        return "".join(out), what
    return text, None


# a comment's mark every line of the paste carries: an output kept in a script's or config's header comment
_COMMENT = re.compile(r"^([ \t]*)#(?: |(?=[\t\r\n]|$))")


def uncommented(text: str) -> str | None:
    """``text`` without the comment mark (``# ``) that every line of it carries (an output kept in a job script's
    header comment, the column layout after the mark kept), or a unified diff's line marks (see :func:`_undiffed`),
    or None when a line does not carry one. A fence, a
    quote's marks before the mark and a prompt line with its command above need not carry it. For a text nothing
    else recognises: a ``#`` line is also an nccl-tests header or a root prompt."""
    lines = text.splitlines(keepends=True)
    bodies = [(x[m.end() :] if (m := _QUOTE.match(x)) else x) for x in lines]
    shown = [b for b in bodies if b.strip() and not _FENCE.match(b) and not _COMMAND.match(b)]
    if len(shown) >= 3 and (diff := _undiffed(lines, bodies, shown)) is not None:
        return diff
    if len(shown) < 3 or not all(_COMMENT.match(b) for b in shown):
        return None
    return "".join(
        _rebuilt(x, b, _COMMENT.sub(r"\1", b, count=1)) if _COMMENT.match(b) else x
        for x, b in zip(lines, bodies, strict=True)
    )


# a unified diff's line marks (GNU diffutils' manual, "Detailed Description of Unified Format": '+' a line added,
# '-' one removed, ' ' one unchanged) and its headers ("--- a/README.md", "+++ b/README.md", "@@ -1,3 +1,14 @@")
_DIFF_HEAD = re.compile(r"^(?:@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@|\+\+\+ |--- |diff --git |index [0-9a-f]+\.\.)")
_DIFF_LINE = re.compile(r"^[+ -]")
_BORDER = re.compile(r"^[+-][-+=|]")  # a table's border ("+-----+"), an lspci tree's "-[0000:00]-+-": no diff line


def _undiffed(lines: list[str], bodies: list[str], shown: list[str]) -> str | None:
    """The new side of a diff every shown line of which carries a diff's mark (an output quoted in a code review:
    '+' lines kept, '-' lines blank, line numbers kept), or None: not a diff, or one adding fewer than three lines."""
    added = [b for b in shown if b.startswith("+") and not _DIFF_HEAD.match(b)]
    if len(added) < 3 or any(_BORDER.match(b) and not _DIFF_HEAD.match(b) for b in shown):
        return None
    if not all(_DIFF_LINE.match(b) or _DIFF_HEAD.match(b) for b in shown):
        return None
    out = []
    for line, body in zip(lines, bodies, strict=True):
        end = line[len(line.rstrip("\r\n")) :]
        if not body.strip() or _FENCE.match(body) or _COMMAND.match(body):
            out.append(line)
        elif _DIFF_HEAD.match(body) or body.startswith("-"):
            out.append(end)  # a header, a removed line: not in the new text
        else:
            out.append(_rebuilt(line, body, body[1:]))
    return "".join(out)


def _indent(shown: list[str]) -> str:
    """The blanks every line that must carry the prefix starts with ("" for none)."""
    return os.path.commonprefix([x[: len(x) - len(x.lstrip(" \t"))] for x in shown])


def _pod_lines(found: list[re.Match[str] | None], shown: list[str]) -> list[re.Match[str] | None]:
    """The prefixes of the lines a pod's prefix must be on (not those a progress bar overwrote); none when two pods'
    or containers' names are seen (several pods' logs interleaved are not one output)."""
    kept = [m for m, x in zip(found, shown, strict=True) if m is not None or not _OVERWRITTEN.match(x)]
    names = {m.group(1, 2) if m.group(1) else m.group(3, 4) for m in kept if m is not None}
    return kept if len(names) == 1 and 2 * len(kept) >= len(shown) else []


def _nccl_log(shown: list[str], found: list[re.Match[str] | None]) -> bool:
    """Whether the lines under the prefixes are an NCCL log (its lines name their host: several hosts' lines of it
    interleaved, as a multi-node launcher prints them, are one log)."""
    return any(m is not None and _NCCL.match(x[m.end() :]) for x, m in zip(shown, found, strict=True))


def _carries(body: str) -> bool:
    """Whether a line (its quote marks off) must carry the prefix: not blank, not a fence, not a prompt line."""
    return bool(body.strip()) and not _FENCE.match(body) and not _PROMPT.match(body) and not _COMPOSE_OWN.match(body)


def _rebuilt(line: str, body: str, new_body: str) -> str:
    """``line`` with its body (what follows its quote marks) replaced."""
    return line[: len(line) - len(body)] + new_body


_NUMBERED = re.compile(r"^[ \t]*(\d{1,6})(?:[ \t]|\r?\n|$)")


def _gutter(bodies: list[tuple[int, str]], lines: list[str], cut: bool) -> str | None:
    """The text without an editor's line-number column (vim's ``:set number``: "  1 P2P=Disabled ..."), when every
    line but fences (and a last line the paste ends inside) carries a number and the numbers count up by one."""
    numbered = [
        (k, b, _NUMBERED.match(b))
        for k, b in bodies
        if _carries(b) and not (cut and k == len(lines) - 1 and not _NUMBERED.match(b))
    ]
    if len(numbered) < 3 or not all(m for _, _, m in numbered):
        return None
    if not any(re.match(r"[ \t]*[^\d\s.+-]", b[m.end() :]) for _, b, m in numbered if m):
        return None  # only numbers after the numbers: a matrix's rows, not an editor's gutter
    numbers = [int(m.group(1)) for _, _, m in numbered]  # type: ignore[union-attr]
    # each run counts up by one; a run may start again lower (the same snippet pasted twice)
    if any(b != a + 1 and b > a for a, b in zip(numbers, numbers[1:], strict=False)) or numbers.count(numbers[0]) > 2:
        return None
    out = list(lines)
    for k, body, m in numbered:
        end = m.end()  # type: ignore[union-attr]
        rest = body[end - 1 :] if body[end - 1 : end] == "\n" else body[end:]
        out[k] = _rebuilt(lines[k], body, rest if rest.strip() else body[len(body.rstrip("\r\n")) :])
    return "".join(out)
