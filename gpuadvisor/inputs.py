"""Reading input files safely: a size cap, a regular file (or a pipe), UTF-8 text, and JSON/TOML whose numbers
are finite and in range, whose nesting is shallow and whose strings are valid Unicode.

Public API:

- ``read_bytes(path, what, limit)``: at most ``limit`` bytes of a regular file or a pipe (``<(cmd)``,
  ``/dev/stdin`` from a pipe); a device (``/dev/zero``), a socket or a directory is refused. Raises
  :class:`InputError` (or the ``error`` class given) with one line.
- ``read_text(path, what, limit)``: the same, decoded as UTF-8 (a UTF-8 byte-order mark is dropped); binary
  data or another encoding is one line naming the byte and its offset.
- ``load_file(path, what, limit, loads, error, missing)``: a file read with ``read_text`` and parsed with
  ``loads_json`` or ``loads_toml``; a path that is not there is one line saying what to give instead.
- ``loads_json(text, origin)`` / ``loads_toml(text, origin)``: parsed data, or one line. NaN, Infinity, a
  float beyond the double range (1e400), an integer beyond 2**64 (or longer than 30 digits), nesting deeper
  than ``MAX_DEPTH``, and a lone UTF-16 surrogate in a string are refused where they are read, so nothing
  downstream meets them.
"""

from __future__ import annotations

import math
import os
import stat
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpuadvisor.errors import InputError

MiB = 2**20
SCAN_LIMIT = 64 * MiB  # a saved scan of a 16-GPU node with a full benchmark is about 1 MiB
CONFIG_LIMIT = 4 * MiB  # policies, rig descriptions, Hugging Face config.json files: a few KiB
MAX_DEPTH = 64  # the scan schema nests about 8 levels; the advice in it about 12
MAX_INT = 2**64  # counters and byte sizes are 64-bit; anything larger is not a measurement
_MAX_INT_DIGITS = 30


def _why(e: OSError) -> str:
    return e.strerror or e.__class__.__name__


def read_bytes(
    path: str | os.PathLike[str],
    what: str,
    limit: int,
    error: type[InputError] = InputError,
    regular_only: bool = False,
) -> bytes:
    """The bytes of ``path``, refusing devices and anything over ``limit`` bytes (read at most limit + 1).
    ``regular_only``: a pipe is refused too, and the open never blocks (a file swapped for a pipe meanwhile)."""
    p = os.fspath(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise error(f"{p}: no such file ({what} expected)") from None
    except OSError as e:
        raise error(f"{p}: cannot read ({_why(e)})") from None
    kind = _kind(st.st_mode)
    if kind == "directory":
        raise error(f"{p}: is a directory, not {what}")
    kinds = ("file",) if regular_only else ("file", "pipe")
    if kind not in kinds:
        raise error(f"{p}: is a {kind}, not a file; give {what} as a regular file")
    try:
        fd = os.open(p, os.O_RDONLY | os.O_CLOEXEC | os.O_NOCTTY | (os.O_NONBLOCK if regular_only else 0))
    except OSError as e:
        raise error(f"{p}: cannot read ({_why(e)})") from None
    try:
        st = os.fstat(fd)  # what was opened, not what was there a moment before
        if _kind(st.st_mode) not in kinds:
            raise error(f"{p}: is a {_kind(st.st_mode)}, not a file; give {what} as a regular file")
        if stat.S_ISREG(st.st_mode) and st.st_size > limit:
            raise error(f"{p}: {st.st_size:,} bytes is larger than {what} can be (limit {limit // MiB} MiB)")
        chunks, total = [], 0
        while total <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:
            raise error(f"{p}: more than {limit // MiB} MiB; larger than {what} can be")
        return b"".join(chunks)
    except OSError as e:
        raise error(f"{p}: cannot read ({_why(e)})") from None
    finally:
        os.close(fd)


# What a file's mode says it is, in the words of the errors (a mode none of these match is a "special file").
_KINDS = (
    (stat.S_ISREG, "file"),
    (stat.S_ISFIFO, "pipe"),
    (stat.S_ISDIR, "directory"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
    (stat.S_ISSOCK, "socket"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "special file")


def read_text(path: str | os.PathLike[str], what: str, limit: int, error: type[InputError] = InputError) -> str:
    return decode_utf8(read_bytes(path, what, limit, error), os.fspath(path), what, error)


def decode_utf8(data: bytes, origin: str, what: str, error: type[InputError] = InputError) -> str:
    if b"\x00" in data:
        line = data[: data.index(b"\x00")].count(b"\n") + 1
        raise error(f"{origin}: binary data (a NUL byte on line {line}), not {what}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise error(
            f"{origin}: not UTF-8 text (byte 0x{data[e.start]:02x} on line {line}); {what} must be UTF-8"
        ) from None
    return text[1:] if text.startswith("\ufeff") else text


class _Bad(Exception):
    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def _float(s: str) -> float:
    v = float(s)
    if math.isnan(v) or s.lstrip("+-").lower() in ("inf", "infinity"):
        raise _Bad(f"{s} where a number was expected: only finite numbers are accepted")
    if not math.isfinite(v):
        raise _Bad(f"the number {s[:40]}{'...' if len(s) > 40 else ''} is beyond the range of a double (about 1.8e308)")
    return v


def _int(s: str) -> int:
    digits = s.lstrip("+-")
    if len(digits) > _MAX_INT_DIGITS or abs(int(s)) > MAX_INT:
        raise _Bad(f"the integer {s[:40]}{'...' if len(s) > 40 else ''} is out of range (more than 2**64)")
    return int(s)


def _constant(s: str) -> Any:
    raise _Bad(f"{s} is not a number JSON allows (only finite numbers)")


def _parsed(
    parse: Callable[[], Any],
    bad_syntax: type[ValueError],
    syntax_why: Callable[[Any], str],
    origin: str,
    what: str,
    error: type[InputError],
) -> Any:
    """``parse()``'s data, checked by :func:`check_tree`; a refused number, deep nesting or a syntax error
    (``bad_syntax``, worded by ``syntax_why``) is one line naming ``origin``."""
    try:
        data = parse()
    except _Bad as e:
        raise error(f"{origin}: {e.why}") from None
    except RecursionError:
        raise error(f"{origin}: nested deeper than {MAX_DEPTH} levels; not {what}") from None
    except bad_syntax as e:
        raise error(f"{origin}: {syntax_why(e)}") from None
    check_tree(data, origin, error)
    return data


def loads_json(text: str, origin: str, what: str = "JSON", error: type[InputError] = InputError) -> Any:
    import json

    return _parsed(
        lambda: json.loads(text, parse_float=_float, parse_int=_int, parse_constant=_constant),
        json.JSONDecodeError,
        lambda e: f"not JSON (line {e.lineno}, column {e.colno}: {e.msg}); expected {what}",
        origin,
        what,
        error,
    )


def loads_toml(text: str, origin: str, what: str = "TOML", error: type[InputError] = InputError) -> dict[str, Any]:
    data: dict[str, Any] = _parsed(
        lambda: tomllib.loads(text, parse_float=_float),
        tomllib.TOMLDecodeError,
        lambda e: f"not valid TOML ({e})",
        origin,
        what,
        error,
    )
    return data


def load_file(
    path: str | os.PathLike[str],
    what: str,
    limit: int,
    loads: Callable[[str, str, str, type[InputError]], Any],
    error: type[InputError] = InputError,
    missing: str = "no such file",
) -> Any:
    """``path`` read as ``what`` (at most ``limit`` bytes of UTF-8) and parsed by ``loads`` (``loads_json`` or
    ``loads_toml``); a path that is not there (not even a dangling link) is ``error("{path}: {missing}")``."""
    p = Path(path)
    if not p.exists() and not p.is_symlink():
        raise error(f"{p}: {missing}")
    return loads(read_text(p, what, limit, error), str(p), what, error)


def check_tree(data: Any, origin: str, error: type[InputError] = InputError) -> None:
    """Depth, integer range, finite floats and valid strings of parsed data, without recursion."""
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        value, where, depth = stack.pop()
        at = f" at {where[:60]}{'...' if len(where) > 60 else ''}" if where else ""
        if depth > MAX_DEPTH:
            raise error(f"{origin}: nested deeper than {MAX_DEPTH} levels{at}")
        if isinstance(value, dict):
            for k, v in value.items():
                _check_str(str(k), origin, f"{where}.{k}" if where else str(k), error)
                stack.append((v, f"{where}.{k}" if where else str(k), depth + 1))
        elif isinstance(value, list):
            stack.extend((v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value))
        elif isinstance(value, str):
            _check_str(value, origin, where, error)
        elif isinstance(value, bool):
            continue
        elif isinstance(value, int):
            if abs(value) > MAX_INT:
                raise error(f"{origin}: the integer{at} is out of range (more than 2**64)")
        elif isinstance(value, float) and not math.isfinite(value):
            raise error(f"{origin}: the number{at} is not finite")


def _check_str(s: str, origin: str, where: str, error: type[InputError]) -> None:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError as e:
        raise error(
            f"{origin}: the string at {where[:80] or 'top level'} holds a lone surrogate "
            f"(\\u{ord(s[e.start]):04x}), which is not Unicode text"
        ) from None
