"""Every file gpuadvisor writes goes through here: one atomic writer, and a check of the outputs before any work.

Public API (for every command that writes a file, today's and later ones):

- ``plan_outputs(outputs, inputs)``: call first, before probing, benchmarking or parsing. ``outputs`` and
  ``inputs`` map an option name (``"--json"``, ``"-o"``, ``"FILE"``) to a path (or None, or a list of paths for
  inputs). Raises :class:`~gpuadvisor.errors.OutputError` (one line, exit 2) when an output is an input (the
  same path, a link to it, or a hard link: compared by device and inode), when two outputs name one file,
  when an output is a symbolic link or a directory, or when its directory is missing. ``"-"`` (stdout) is
  never checked.
- ``write_atomic(path, data, what="output") -> Path``: write ``data`` (str, as UTF-8, or bytes) so that a
  reader sees the old file or the new one, never a part. A temp file is created with
  ``O_CREAT | O_EXCL | O_NOFOLLOW`` in the target's directory, written, fsync'd, renamed over the target,
  and the directory is fsync'd. A file being replaced keeps its mode (and, where allowed, its owner); a new
  file gets 0666 less the umask (0644 usually), as any other program's. On any failure (a full disk, no
  permission) the previous file is left as it was, the temp file is removed, and an OutputError says what
  happened in one line.

Symbolic links: the output path is never followed. A symlink at the output path is refused (exit 2) by both
functions: replacing the link would surprise whoever made it, and following it lets anyone who can write the
directory point a root-run ``check -o`` at /etc/shadow. The directories above the file may be links.

Not regular files: an existing FIFO or character device (``/dev/null``, a named pipe) is written directly,
as no rename can replace it; use ``-`` for stdout where a command offers it.

Hard links: the rename gives the path a new inode, so other names of the old file keep the old content (as
with every atomic writer: editors, rsync, install).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

from gpuadvisor.errors import OutputError

Paths = str | os.PathLike[str] | None


def _why(e: OSError) -> str:
    return e.strerror or e.__class__.__name__


def _as_list(value: Paths | Iterable[Paths]) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str | os.PathLike):
        return [os.fspath(value)]
    return [os.fspath(v) for v in value if v is not None]


def _input_ids(path: str) -> list[tuple[int, int]]:
    """(device, inode) of an input, following links; for a directory, of every file directly in it too."""
    try:
        st = os.stat(path)
    except OSError:
        return []  # a preset name, or a missing file: the reader says what is wrong
    ids = [(st.st_dev, st.st_ino)]
    if stat.S_ISDIR(st.st_mode):
        with contextlib.suppress(OSError), os.scandir(path) as it:
            for entry in it:
                with contextlib.suppress(OSError):
                    s = entry.stat()
                    ids.append((s.st_dev, s.st_ino))
    return ids


def plan_outputs(outputs: Mapping[str, Paths], inputs: Mapping[str, Paths | Iterable[Paths]] | None = None) -> None:
    """Refuse, before any work, outputs that would clobber an input, each other, or follow a link."""
    inputs = inputs or {}
    taken: dict[tuple[int, int], str] = {}  # (dev, ino) -> "OPTION PATH" of the input
    for opt, value in inputs.items():
        for p in _as_list(value):
            for key in _input_ids(p):
                taken.setdefault(key, f"the input {p}" if opt in ("FILE", "SCAN") else f"the input of {opt} ({p})")
    seen: dict[str, str] = {}  # real path -> option
    seen_ids: dict[tuple[int, int], str] = {}
    for opt, value in outputs.items():
        if value is None or os.fspath(value) in ("-", ""):
            continue
        path = os.fspath(value)
        _check_output(opt, path, taken, seen_ids)
        parent = os.path.dirname(path) or "."
        real = os.path.join(os.path.realpath(parent), os.path.basename(path))
        if real in seen:
            raise OutputError(
                f"{path}: cannot write the output of {opt}: {seen[real]} names the same file "
                "(give each output its own file)"
            )
        seen[real] = opt


def _check_output(opt: str, path: str, taken: dict[tuple[int, int], str], seen_ids: dict[tuple[int, int], str]) -> None:
    """One output: not a link or a directory, in a writable directory, not an input or another output."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise OutputError(f"{path}: cannot write the output of {opt} ({_why(e)})") from None
    if st is not None and stat.S_ISLNK(st.st_mode):
        raise OutputError(
            f"{path}: cannot write the output of {opt}: it is a symbolic link, and gpuadvisor "
            "never writes through one (give the real path, or remove the link)"
        )
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise OutputError(f"{path}: cannot write the output of {opt}: it is a directory (give a file name)")
    parent = os.path.dirname(path) or "."
    if not os.path.isdir(parent):
        raise OutputError(f"{path}: cannot write the output of {opt}: the directory {parent} does not exist")
    if st is None and not os.access(parent, os.W_OK):
        raise OutputError(f"{path}: cannot write the output of {opt}: no permission to create files in {parent}")
    if st is not None and stat.S_ISREG(st.st_mode):
        key = (st.st_dev, st.st_ino)
        if key in taken:
            raise OutputError(
                f"{path}: cannot write the output of {opt}: it is {taken[key]}, which writing "
                "would destroy (choose another output file)"
            )
        if key in seen_ids:
            raise OutputError(
                f"{path}: cannot write the output of {opt}: {seen_ids[key]} names the same file "
                "(give each output its own file)"
            )
        seen_ids[key] = opt


def write_atomic(path: str | os.PathLike[str], data: str | bytes, *, what: str = "output") -> Path:
    """Replace ``path`` with ``data`` atomically (see the module's description); returns the path."""
    p = Path(path)
    blob = data.encode("utf-8", errors="backslashreplace") if isinstance(data, str) else bytes(data)
    parent = str(p.parent) if str(p.parent) else "."
    name = p.name
    if not name or name in (".", ".."):
        raise OutputError(f"{p}: not a file name; cannot write the {what}")
    try:
        dfd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        raise OutputError(f"{p}: cannot write the {what} (the directory {parent}: {_why(e)})") from None
    try:
        try:
            old = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            old = None
        if old is not None:
            if stat.S_ISLNK(old.st_mode):
                raise OutputError(
                    f"{p}: is a symbolic link; gpuadvisor never writes through a link "
                    "(give the real path, or remove the link)"
                )
            if stat.S_ISDIR(old.st_mode):
                raise OutputError(f"{p}: is a directory; cannot write the {what} there")
            if not stat.S_ISREG(old.st_mode):
                _write_in_place(p, name, dfd, blob, what)
                return p
        tmp = _create_temp(p, name, dfd, what)
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
            try:
                if old is not None:
                    os.fchmod(fd, stat.S_IMODE(old.st_mode))
                    if (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
                        with contextlib.suppress(OSError):
                            os.fchown(fd, old.st_uid, old.st_gid)
                            os.fchmod(fd, stat.S_IMODE(old.st_mode))  # chown clears set-id bits
                _write_all(fd, blob)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException as e:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
            if isinstance(e, OSError):
                kept = "; the previous file is unchanged" if old is not None else ""
                raise OutputError(f"{p}: cannot write the {what} ({_why(e)}){kept}") from None
            raise
        with contextlib.suppress(OSError):  # some file systems cannot fsync a directory; the data is already safe
            os.fsync(dfd)
    finally:
        os.close(dfd)
    return p


def _create_temp(p: Path, name: str, dfd: int, what: str) -> str:
    import secrets  # here, not at the top: most commands write no file, and it imports hashlib

    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(100):
        tmp = f".{name[:200]}.{secrets.token_hex(6)}.tmp"  # hidden, and not *.prom: node_exporter skips it
        try:
            os.close(os.open(tmp, flags, 0o666, dir_fd=dfd))
            return tmp
        except FileExistsError:
            continue
        except OSError as e:
            raise OutputError(f"{p}: cannot write the {what} ({_why(e)})") from None
    raise OutputError(f"{p}: cannot write the {what} (no free temporary file name in {p.parent})")


def _write_in_place(p: Path, name: str, dfd: int, blob: bytes, what: str) -> None:
    """A FIFO or a device: no rename can replace it, so write to it (never following a link)."""
    try:
        fd = os.open(name, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
        try:
            _write_all(fd, blob)
        finally:
            os.close(fd)
    except OSError as e:
        raise OutputError(f"{p}: cannot write the {what} ({_why(e)})") from None


def _write_all(fd: int, blob: bytes) -> None:
    view = memoryview(blob)
    while view:
        n = os.write(fd, view[: 1 << 20])
        if n <= 0:  # pragma: no cover - write(2) returns an error rather than 0 for files
            raise OSError(errno.EIO, "short write")
        view = view[n:]
