"""journalctl -o json (and json-seq's lines): each entry one JSON object, read as the syslog-style line it stands for.

journalctl(1) with ``-o json`` prints one entry per line as a JSON object whose fields are the journal's
(systemd.journal-fields(7)): ``MESSAGE``, ``__REALTIME_TIMESTAMP`` (microseconds since the epoch, UTC),
``_HOSTNAME``, ``SYSLOG_IDENTIFIER`` and ``_TRANSPORT`` (``kernel`` for the kernel's ring buffer). An entry becomes
``2026-11-28T10:02:03.123456+00:00 host kernel: MESSAGE`` (other senders: ``IDENT: MESSAGE``), one line for one,
so that the kernel-log reader reads it as an ISO-dated journal line and line numbers stay those of the paste.
"""

from __future__ import annotations

import datetime as dt
import json
import re

JSON_LINE = re.compile(r'^\s*\{.*"MESSAGE"\s*:\s*"')


def journal_line(line: str) -> str | None:
    """The line a journal JSON entry stands for, or None when ``line`` is no such entry."""
    if not JSON_LINE.match(line):
        return None
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    message = entry.get("MESSAGE") if isinstance(entry, dict) else None
    if not isinstance(message, str):
        return None
    when = _when(str(entry.get("__REALTIME_TIMESTAMP", "")))
    host = "".join(str(entry.get("_HOSTNAME") or "").split()) or "-"
    sender = "kernel" if entry.get("_TRANSPORT") == "kernel" else str(entry.get("SYSLOG_IDENTIFIER") or "-")
    return f"{when} {host} {sender}: {' '.join(message.splitlines())}"


def _when(stamp: str) -> str:
    """``__REALTIME_TIMESTAMP`` (microseconds since the epoch) as an ISO time in UTC; "-" for what is not one."""
    try:
        return dt.datetime.fromtimestamp(int(stamp) / 1e6, tz=dt.UTC).isoformat(timespec="microseconds")
    except (ValueError, OverflowError, OSError):
        return "-"


def from_journal_json(text: str) -> str:
    """``text`` with each journal JSON entry replaced by its line (other lines as they are)."""
    if '"MESSAGE"' not in text:
        return text
    return "\n".join(journal_line(x) or x for x in text.split("\n"))
