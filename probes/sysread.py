"""The files the sysfs and /proc probes read, behind one small reader: the live filesystem, or a tree in memory.

A probe reads a file, lists a directory, tests one, or resolves a link through a ``Files`` object, with
absolute path strings. ``OS`` is the live filesystem; ``MemFiles`` holds a generated tree (the simulator's:
a rig description written by ``probes.fakesysfs`` and ``probes.fakebeyond``) in a dict, so a simulated rig is
read by the same probe code without writing its few thousand small files to disk and reading them back. Both
take the writers' calls too (make a directory, write a file, make a link), so a test can write the same tree
to disk.
"""

from __future__ import annotations

import os
import posixpath


class Files:
    """The live filesystem (reads as ``open``, ``os.listdir``, ``os.path.realpath`` do; writes with os calls)."""

    def read_bytes(self, path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    def read_text(self, path: str) -> str:
        with open(path) as f:
            return f.read()

    def listdir(self, path: str) -> list[str]:
        return os.listdir(path)

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(path)

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def realpath(self, path: str) -> str:
        return os.path.realpath(path)

    def mkdir(self, path: str) -> None:
        """Make ``path`` and its missing parents."""
        os.makedirs(path, exist_ok=True)

    def write(self, path: str, data: bytes) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    def symlink(self, target: str, link: str) -> None:
        """A link at ``link`` to the absolute path ``target`` (written relative, as sysfs has its links)."""
        os.symlink(os.path.relpath(target, os.path.dirname(link)), link)


OS = Files()


class MemFiles(Files):
    """A tree in memory: files (bytes), directories (their entry names) and links (absolute targets), each keyed
    by its absolute path with no link in it; a path through a link is resolved on every read, as the kernel does
    (links first, then "..", as ``os.path.realpath``). Paths are absolute. A missing path raises
    FileNotFoundError, a file listed as a directory NotADirectoryError."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.dirs: dict[str, dict[str, None]] = {"/": {}}
        self.links: dict[str, str] = {}
        self._real: dict[str, str] = {}  # resolved paths; a new link clears it

    def realpath(self, path: str) -> str:
        if path in self.files or path in self.dirs:
            return path
        real = self._real.get(path)
        if real is None:
            parent, _, name = path.rpartition("/")
            if parent and name not in (
                "",
                ".",
                "..",
            ):  # the parent's real path (memoised: a directory's files share it)
                base = self.realpath(parent)
                real = f"{base}/{name}" if base != "/" else f"/{name}"
                target = self.links.get(real)
                if target is not None:
                    real = self._resolve(target)
            else:
                real = self._resolve(path)
            self._real[path] = real
        return real

    def _resolve(self, path: str) -> str:
        out = ""
        for part in path.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                out = out.rpartition("/")[0]
                continue
            out = f"{out}/{part}"
            target = self.links.get(out)
            if target is not None:
                out = self._resolve(target)
        return out or "/"

    def read_bytes(self, path: str) -> bytes:
        data = self.files.get(path)
        if data is None:
            data = self.files.get(self.realpath(path))
            if data is None:
                raise FileNotFoundError(2, "No such file or directory", path)
        return data

    def read_text(self, path: str) -> str:
        return self.read_bytes(path).decode()

    def listdir(self, path: str) -> list[str]:
        real = self.realpath(path)
        entries = self.dirs.get(real)
        if entries is None:
            if real in self.files:
                raise NotADirectoryError(20, "Not a directory", path)
            raise FileNotFoundError(2, "No such file or directory", path)
        return list(entries)

    def is_dir(self, path: str) -> bool:
        return self.realpath(path) in self.dirs

    def exists(self, path: str) -> bool:
        real = self.realpath(path)
        return real in self.dirs or real in self.files

    def _enter(self, path: str) -> str:
        """Name ``path`` in its parent directory (made as needed); its path with the parent's links resolved."""
        parent, _, name = path.rpartition("/")
        parent = parent or "/"
        entries = self.dirs.get(parent)
        if entries is None:
            parent = self.realpath(parent)
            if parent not in self.dirs:
                self.mkdir(parent)
            entries = self.dirs[parent]
        entries[name] = None
        return f"{parent}/{name}" if parent != "/" else f"/{name}"

    def mkdir(self, path: str) -> None:
        path = posixpath.normpath(path)
        if path not in self.dirs and self.realpath(path) not in self.dirs:
            self.dirs[self._enter(path)] = {}

    def write(self, path: str, data: bytes) -> None:
        self.files[self._enter(path)] = data

    def symlink(self, target: str, link: str) -> None:
        self.links[self._enter(link)] = posixpath.normpath(target)
        self._real.clear()
