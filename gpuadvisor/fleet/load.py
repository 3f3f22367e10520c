"""Read a set of node scans into ``Node``s: a directory (every ``*.json`` below it) or files.

Each file is one of:

- a scan (``gpuadvisor scan --json`` / ``check --json`` / ``bench --json``: kind "gpuadvisor-scan"), read by
  the facts model's lean load (``gpuadvisor.facts.lean``) for the fields the fleet view compares (hardware shape,
  versions and modes, measurements, the node's own failing findings); a field of the wrong type is treated as
  not recorded;
- a ``check --format json`` report: its verdict is kept; it holds no facts to compare, so the node is listed
  but enters no group unless its scan is there too; with an ``error`` field it is a node whose check could
  not run;
- a failure record ``{"kind": "gpuadvisor-node-error", "hostname": ..., "error": ..., "created_at": ...}``
  (written by the examples/slurm and examples/k8s wrappers when ``check`` exits 2): a node that could not scan.

A file that is not JSON, or JSON of none of these kinds, is a failed node named after the file. The node's
name is the scan's host name (the file name when the scan has none, e.g. a redacted scan). Two files for one
host: the newer scan wins and the node says so.
"""

from __future__ import annotations

import datetime as dt
import errno
import os
import stat
from array import array
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from gpuadvisor.errors import InputError
from gpuadvisor.facts import Rig, lean
from gpuadvisor.fleet import drift, figures, groups
from gpuadvisor.fleet.model import FigureTable, Node, gc_paused
from gpuadvisor.inputs import SCAN_LIMIT
from gpuadvisor.severity import FAIL, WARN


def parse_time(text: Any) -> dt.datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        t = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=dt.UTC)


SKIPPED: dict[Path, str] = {}  # files a directory walk found and will not open, with why (read as failed nodes)
WALKED: set[Path] = set()  # files a directory walk found: opened only as regular files, never blocking
MAX_FILES = 200_000  # scan files one fleet run reads (a 50,000-node fleet with a check report beside each scan)


def _what(p: Path) -> str:
    try:
        mode = p.stat().st_mode
    except OSError as e:
        return f"cannot be read ({e.strerror or e.__class__.__name__})"
    kind = _kind(mode)
    return (
        "is not a regular file or directory"
        if kind == "not a regular file"
        else f"is {kind}, not a scan file or directory"
    )


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISFIFO, "a pipe"),
        (stat.S_ISDIR, "a directory"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _not_read(q: Path, root: str) -> str | None:
    """Why a ``*.json`` a directory walk found is not opened (None: a regular file inside the scans directory).
    Decided from lstat/stat alone: a pipe, device or socket is never opened (opening a pipe blocks until a writer
    comes; a device can act on open), and a link is followed only where it ends at a file inside ``root``."""
    try:
        st = os.lstat(q)
        if stat.S_ISLNK(st.st_mode):
            real = os.path.realpath(q)
            st = os.stat(q)  # ELOOP: a loop of links
            if not Path(real).is_relative_to(root):
                return f"{q}: a symbolic link to {real}, outside the scans directory: not followed"
    except OSError as e:
        why = "a loop of symbolic links" if e.errno == errno.ELOOP else e.strerror or e.__class__.__name__
        return f"{q}: cannot be read ({why}): not followed"
    if not stat.S_ISREG(st.st_mode):
        return f"{q}: {_kind(st.st_mode)}, not a regular file: not opened (a node writes its scan as a file)"
    return None


def _walk(raw: str, p: Path, out: list[Path]) -> None:
    """Every ``*.json`` below ``p`` (links to directories are not entered, so no loop of directories)."""
    root = os.path.realpath(p)
    for dirpath, dirnames, filenames in os.walk(p):
        dirnames.sort()
        for f in sorted(filenames):
            if f.endswith(".json"):
                q = Path(dirpath) / f
                why = _not_read(q, root)
                WALKED.add(q)
                if why is None:
                    SKIPPED.pop(q, None)
                else:
                    SKIPPED[q] = why
                out.append(q)
                if len(out) > MAX_FILES:  # checked per file: a directory of millions stops here, not after
                    raise InputError(
                        f"{raw}: more than {MAX_FILES:,} scan files (the limit of one fleet run); split the fleet"
                    )


def files_of(paths: list[str]) -> list[Path]:
    """Every scan file: a file or pipe given, or every ``*.json`` below a directory given. Of a directory, only
    regular files are read, and links only where they end inside it: anything else found there (a pipe, a device,
    a loop of links, a link out of the directory) is listed and read as a failed node naming the file."""
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            _walk(raw, p, out)
        elif p.is_file() or (p.exists() and stat.S_ISFIFO(p.stat().st_mode)):
            out.append(p)
        elif p.exists():
            raise InputError(f"{raw}: {_what(p)} (give the directory the nodes wrote their scans to)")
        else:
            raise InputError(f"{raw}: no such file or directory (give the directory the nodes wrote their scans to)")
    return out


def node_from(path: Path, data: Any) -> Node:
    """The node one parsed file stands for (facts.lean takes the file apart: a scan, a record, or refused)."""
    try:
        got = lean.from_json(data, path)
    except lean.Refused as e:
        return Node(name=e.host or path.stem, path=str(path), status="failed", error=e.why)
    if isinstance(got, Rig):
        return scan_node(path, got)
    n = Node(name=got.hostname or path.stem, path=str(path), created_at=parse_time(got.created_at))
    if got.kind == "error":
        n.status, n.error = "failed", got.error
    else:  # check --format json without its scan
        n.failing_checks = got.failing
        n.notes.append("check report only (no facts to compare): save the scan too with check --json FILE")
    return n


def scan_node(path: Path, rig: Rig) -> Node:
    """A node from its scan's facts (the sections facts.lean reads)."""
    n = Node(name=rig.host.hostname or path.stem, path=str(path), created_at=parse_time(rig.source.created_at))
    sh = groups.shape(rig)
    if sh is not None:
        n.shape, n.shape_label = sh
        n.gpus, listed, active, nics = groups.counts(rig)
        n.hw = {
            "listed": listed,
            "active": active,
            "nics": nics,
            "index": [g.index for g in rig.gpus],
            "rdma": groups.rdma_ports(rig),
            "rdma_unnumbered": groups.unnumbered_ports(rig),
        }
    else:
        n.notes.append("the scan lists no GPU")
    n.attrs = drift.attributes(rig)
    n.figures, n.cross = figures.extract(rig.measurements, path.name, rig.storage)
    n.checks = [f for f in rig.findings if f.severity in (FAIL, WARN)]
    n.failing_checks = sorted({c.code for c in n.checks if c.severity == FAIL})
    return n


def _failed(p: Path, why: str) -> Node:
    return Node(name=p.stem, path=str(p), status="failed", error=why)


def read_node(p: Path) -> Node:
    """One file as a node; anything wrong with it (a link out of the scans directory, too large, not UTF-8, not
    JSON, NaN or Infinity, nested too deep, fields of the wrong type) is a failed node naming the file."""
    why = SKIPPED.get(p)
    if why is not None:
        return _failed(p, why)
    try:
        raw = lean.read_bytes(p, SCAN_LIMIT, regular_only=p in WALKED)
        rig = lean.fast_rig(raw)  # a well-formed scan; any other file is parsed and taken apart below
        data = lean.parse_bytes(raw, p) if rig is None else None
    except InputError as e:
        return _failed(p, f"unreadable scan: {e}")
    del raw
    try:
        return scan_node(p, rig) if rig is not None else node_from(p, data)
    except (TypeError, ValueError, AttributeError, KeyError, IndexError) as e:
        return _failed(
            p,
            f"{p}: a field of the scan has an unexpected shape ({e.__class__.__name__}: "
            f"{str(e).splitlines()[0][:100] if str(e) else ''}); not a scan this gpuadvisor writes",
        )


def load_nodes(paths: list[str], files: list[Path] | None = None, jobs: int = 1) -> dict[str, Node]:
    """Every file as a node, by name; ``jobs`` processes read and take apart the files (the parent keeps the
    order, so which of two files for one host wins does not depend on it). The cycle collector pauses meanwhile:
    a scan's parsed JSON and its Rig are acyclic, freed by reference counting as each node is made, and would
    otherwise set off a collection every few scans that walks every node read so far."""
    with gc_paused():
        return _load_nodes(_read_all(files if files is not None else files_of(paths), jobs))


CHUNK = 64  # files a worker process reads per task


def _read_all(files: list[Path], jobs: int) -> Iterator[Node]:
    if jobs <= 1 or len(files) < 2 * CHUNK:
        yield from map(read_node, files)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    tasks = [[(p, SKIPPED.get(p), p in WALKED) for p in files[i : i + CHUNK]] for i in range(0, len(files), CHUNK)]
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context(method)) as pool:
        for meta, packed in pool.map(_read_chunk, tasks):
            for node, cols in packed:
                if cols is not None:
                    node.figures = _table(meta, cols)
                yield node


# A node's figures in columns (keys, values, measurement index and row, expected, source file): one object each
# instead of a tuple per figure, so a chunk of nodes crosses the process boundary compact.
Columns = tuple[list[str], array, array, array, list[float | None], str]


def _table(meta: dict[str, tuple[str, str, bool]], cols: Columns) -> FigureTable:
    keys, values, index, row, expected, src = cols
    rows = ((k, *meta[k], v, i, r, e) for k, v, i, r, e in zip(keys, values, index, row, expected, strict=True))
    return FigureTable.of(rows, src)


def _read_chunk(
    items: list[tuple[Path, str | None, bool]],
) -> tuple[dict[str, tuple[str, str, bool]], list[tuple[Node, Columns | None]]]:
    """A worker's task: its files as nodes, each node's figures in columns by key (a FigureTable's key ids are its
    process's own, so the parent makes the table again from the keys), and each key's family, unit and direction."""
    meta: dict[str, tuple[str, str, bool]] = {}
    out: list[tuple[Node, Columns | None]] = []
    for p, why, walked in items:
        if why is not None:
            SKIPPED[p] = why
        if walked:
            WALKED.add(p)
        n = read_node(p)
        figs = n.figures
        if not isinstance(figs, FigureTable):
            out.append((n, None))
            continue
        n.figures = {}
        keys, values, index, row, expected = [], array("d"), array("q"), array("q"), []
        for f in figs.values():
            meta.setdefault(f.key, (f.family, f.unit, f.higher_better))
            keys.append(f.key)
            values.append(f.value)
            index.append(f.index)
            row.append(f.row)
            expected.append(f.expected)
        out.append((n, (keys, values, index, row, expected, figs.src)))
    return meta, out


def _load_nodes(read: Iterable[Node]) -> dict[str, Node]:
    nodes: dict[str, Node] = {}
    suffix: dict[str, int] = {}  # host name -> the next "[i]" of its duplicates (linear in the duplicates)
    for n in read:
        old = nodes.get(n.name)
        if old is None:
            nodes[n.name] = n
            continue
        if (old.shape is not None or old.status == "failed") and (n.shape is not None or n.status == "failed"):
            # two scans (or a scan and a failed one) claim one host name: keep both apart by file, say so
            _duplicate(nodes, old, n, suffix)
            continue
        keep, drop = _newer(old, n)
        if keep.shape is None and drop.shape is not None and drop.status == "ok" and keep.status == "ok":
            keep, drop = drop, keep  # a check report beside its scan: the scan holds the facts
        keep.notes.append(f"also {drop.path} ({drop.status}{', older' if keep is not drop else ''}): not used")
        nodes[n.name] = keep
    return nodes


def _duplicate(nodes: dict[str, Node], old: Node, new: Node, suffix: dict[str, int]) -> None:
    """Keep ``new`` apart as "name [i]"; the first scan of the name says so once, each later one names itself."""
    i = suffix.get(new.name, 2)
    while f"{new.name} [{i}]" in nodes:
        i += 1
    suffix[new.name] = i + 1
    first = old.path or old.name
    new.name = f"{new.name} [{i}]"
    nodes[new.name] = new
    why = (
        f"two or more scans claim the host name {old.name.split(' [')[0]!r} ({first}, {new.path}): kept apart "
        "by file; give each node its own name (GPUADVISOR_HOSTNAME, or the scheduler's node name)"
    )
    if not old.duplicate:
        old.notes.append(why)
    new.notes.append(why)
    old.duplicate = new.duplicate = True


def _newer(a: Node, b: Node) -> tuple[Node, Node]:
    ta = a.created_at or dt.datetime.min.replace(tzinfo=dt.UTC)
    tb = b.created_at or dt.datetime.min.replace(tzinfo=dt.UTC)
    return (b, a) if tb > ta else (a, b)
