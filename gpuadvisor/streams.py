"""stdout and stderr as the command line uses them: no control characters from the data, and no crash or
wrong exit status when the reader goes away or the disk fills.

Public API:

- ``sanitise(text, allow_colour=False) -> str``: every control character that could drive a terminal is
  written visibly as an escape (``\\x1b``, ``\\x07``, ``\\r``, ``\\x9b``, ``\\u202e``): C0 but newline and
  tab, DEL, C1, the Unicode bidirectional overrides, and lone surrogates. With ``allow_colour`` the colour
  sequences gpuadvisor itself emits (SGR: reset, bold, dim, the 16 colours) pass; nothing else does, so a
  hostname holding an OSC title sequence, a BEL or a CR is printed as text, never obeyed.
- ``guard_streams()``: a context manager the CLI's ``main`` runs every command in. It puts ``sys.stdout``
  and ``sys.stderr`` behind :class:`GuardedStream`: every write is sanitised (colour passes only on a
  terminal, where the renderers emit it); a closed pipe (EPIPE: ``| head``) sends the rest of the output to
  /dev/null so the command finishes as it would have, with its own exit status; a failed write to stdout
  (ENOSPC: ``> /dev/full``) raises :class:`~gpuadvisor.errors.OutputError` (one line, exit 2) once.
  On leaving, it flushes both streams, so nothing is left for the interpreter's final flush to fail on.

JSON on stdout is unchanged by the sanitiser: ``json.dumps`` escapes every control character itself.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import sys
from collections.abc import Iterator
from typing import Any

from gpuadvisor.errors import OutputError

# U+2028/U+2029 (line and paragraph separators): a line break to editors, browsers and str.splitlines, inside one
# line of ours
_BAD = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_SGR = re.compile("\x1b\\[([0-9;]{0,16})m")
_SGR_OK = {"", "0", "1", "2", "4", "22", "24", "39", *map(str, range(30, 38)), *map(str, range(90, 98))}
_NAMED = {"\r": "\\r", "\x1b": "\\x1b", "\x07": "\\x07", "\x08": "\\x08", "\x0b": "\\x0b", "\x0c": "\\x0c"}


def _escape(c: str) -> str:
    n = ord(c)
    return _NAMED.get(c) or (f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}")


def _escape_all(m: re.Match[str]) -> str:
    return "".join(_escape(c) for c in m.group(0))


def sanitise(text: str, allow_colour: bool = False) -> str:
    """``text`` with every terminal control character made visible (see the module's description)."""
    if not _BAD.search(text):
        return text
    if not allow_colour:
        return _BAD.sub(_escape_all, text)
    out, pos = [], 0
    for m in _SGR.finditer(text):
        if all(p in _SGR_OK for p in m.group(1).split(";")):
            out.append(_BAD.sub(_escape_all, text[pos : m.start()]))
            out.append(m.group(0))
            pos = m.end()
    out.append(_BAD.sub(_escape_all, text[pos:]))
    return "".join(out)


_GONE = (errno.EPIPE, errno.ECONNRESET)


class GuardedStream:
    """A text stream that sanitises what is written and survives its reader going away (see above)."""

    def __init__(self, stream: Any, name: str) -> None:
        self._stream = stream
        self._name = name
        self._failed = False
        self.error: OutputError | None = None  # why stdout could not be written; raised until reported
        self.reported = False
        try:
            self._fd: int | None = stream.fileno()
        except (AttributeError, OSError, ValueError):
            self._fd = None
        try:
            self._tty = bool(stream.isatty())
        except (AttributeError, OSError, ValueError):
            self._tty = False
        with contextlib.suppress(AttributeError, ValueError, OSError):
            stream.reconfigure(errors="backslashreplace")

    # -- what click and print look at ----------------------------------------------------------------------
    @property
    def encoding(self) -> str:
        return getattr(self._stream, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str:
        return getattr(self._stream, "errors", None) or "strict"

    def isatty(self) -> bool:
        return self._tty

    def fileno(self) -> int:
        if self._fd is None:
            raise OSError(errno.EBADF, "no file descriptor")
        return self._fd

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    @property
    def closed(self) -> bool:
        return False

    def __getattr__(self, name: str) -> Any:  # anything else (line_buffering, name, mode) from the stream
        return getattr(self._stream, name)

    # -- writing ----------------------------------------------------------------------------------------
    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if self._failed or not text:
            self._still_failing()
            return len(text)
        try:
            self._stream.write(sanitise(text, allow_colour=self._tty))
        except OSError as e:
            self._fail(e)
        return len(text)

    def write_control(self, text: str) -> int:
        """Write gpuadvisor's own control characters (a progress bar's carriage return) as they are."""
        if self._failed or not text:
            self._still_failing()
            return len(text)
        try:
            self._stream.write(text)
        except OSError as e:
            self._fail(e)
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if self._failed:
            self._still_failing()
            return
        try:
            self._stream.flush()
        except OSError as e:
            self._fail(e)

    def _fail(self, e: OSError) -> None:
        """The reader is gone or the device refused: send the rest to /dev/null; tell once (stdout only)."""
        self._failed = True
        if self._fd is not None:
            with contextlib.suppress(OSError):
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, self._fd)
                os.close(devnull)
            with contextlib.suppress(OSError, ValueError):
                self._stream.flush()  # what was buffered now goes to /dev/null, not to the final flush
        if e.errno in _GONE or self._name == "stderr":
            return  # `| head`: the reader has what it wanted; a failed stderr has nowhere to report
        self.error = OutputError(f"cannot write to {self._name} ({e.strerror or e})")
        raise self.error from None

    def _still_failing(self) -> None:
        """Raise the write error again until it has been reported (a caller may have swallowed it)."""
        if self.error is not None and not self.reported:
            raise self.error


@contextlib.contextmanager
def guard_streams() -> Iterator[None]:
    """Run the body with sys.stdout and sys.stderr guarded; flush both on the way out (see above)."""
    old_out, old_err = sys.stdout, sys.stderr
    out = GuardedStream(old_out, "stdout") if old_out is not None else None
    err = GuardedStream(old_err, "stderr") if old_err is not None else None
    sys.stdout, sys.stderr = out or old_out, err or old_err
    try:
        yield
    finally:
        try:
            if out is not None:
                out.flush()
        finally:
            if err is not None:
                err.flush()
            sys.stdout, sys.stderr = old_out, old_err
