"""Read a set of node scans into ``Node``s: a directory (every ``*.json`` below it) or files.

Each file is one of:

- a scan (``gpuadvisor scan --json`` / ``check --json`` / ``bench --json``: kind "gpuadvisor-scan"), read
  for the fields the fleet view compares (hardware shape, versions and modes, measurements, the node's own
  failing findings); a field of the wrong type is treated as not recorded;
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
import json
import os
import stat
from pathlib import Path
from typing import Any

from gpuadvisor.errors import InputError
from gpuadvisor.fleet import drift, figures, groups
from gpuadvisor.fleet.model import Node
from gpuadvisor.inputs import SCAN_LIMIT, _Bad, _constant, _float, decode_utf8, loads_json, read_bytes

SCAN_KIND = "gpuadvisor-scan"
ERROR_KIND = "gpuadvisor-node-error"


def parse_time(text: Any) -> dt.datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        t = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=dt.UTC)


ESCAPES: set[Path] = set()  # links found by files_of that lead out of their scans directory (read as failed)
MAX_FILES = 200_000  # scan files one fleet run reads (a 50,000-node fleet with a check report beside each scan)


def _what(p: Path) -> str:
    try:
        mode = p.stat().st_mode
    except OSError as e:
        return f"cannot be read ({e.strerror or e.__class__.__name__})"
    for test, name in (
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISFIFO, "a pipe"),
    ):
        if test(mode):
            return f"is {name}, not a scan file or directory"
    return "is not a regular file or directory"


def files_of(paths: list[str]) -> list[Path]:
    """Every scan file: a file or pipe given, or every ``*.json`` below a directory given (links inside a directory
    are followed only where they stay inside it; one that leads out is listed and read as a failed node)."""
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            root = p.resolve()
            for dirpath, dirnames, filenames in os.walk(p):
                dirnames.sort()
                for f in sorted(filenames):
                    if f.endswith(".json"):
                        out.append(Path(dirpath) / f)
                if len(out) > MAX_FILES:
                    raise InputError(
                        f"{raw}: more than {MAX_FILES:,} scan files (the limit of one fleet run); split the fleet"
                    )
            for q in out:
                if q.is_symlink() and not q.resolve().is_relative_to(root):
                    ESCAPES.add(q)
        elif p.is_file() or (p.exists() and stat.S_ISFIFO(p.stat().st_mode)):
            out.append(p)
        elif p.exists():
            raise InputError(f"{raw}: {_what(p)} (give the directory the nodes wrote their scans to)")
        else:
            raise InputError(f"{raw}: no such file or directory (give the directory the nodes wrote their scans to)")
    return out


def node_from(path: Path, data: Any) -> Node:
    where = path.name
    if not isinstance(data, dict):
        return Node(
            name=path.stem, path=str(path), status="failed", error="not a gpuadvisor scan (top level is not an object)"
        )
    kind = data.get("kind")
    if kind == SCAN_KIND:
        bad = _malformed(data)
        if bad:
            return Node(
                name=_name(data, path),
                path=str(path),
                status="failed",
                error=f"{path}: {bad}: not a scan this gpuadvisor writes",
            )
        if data.get("schema_version") != 1:
            return Node(
                name=_name(data, path),
                path=str(path),
                status="failed",
                error=f"scan schema_version {data.get('schema_version')!r}: this gpuadvisor reads version 1",
            )
        s = data.get("source")
        src: dict[str, Any] = s if isinstance(s, dict) else {}
        n = Node(name=_name(data, path), path=str(path), created_at=parse_time(src.get("created_at")))
        sh = groups.shape(data)
        if sh is not None:
            n.shape, n.shape_label = sh
            n.gpus, listed, active, nics = groups.counts(data)
            n.hw = {
                "listed": listed,
                "active": active,
                "nics": nics,
                "index": [g.get("index", i) for i, g in enumerate(data["gpus"])],
                "rdma": groups.rdma_ports(data),
            }
        else:
            n.notes.append("the scan lists no GPU")
        n.attrs = drift.attributes(data)
        n.figures, n.cross = figures.extract(data.get("measurements"), where)
        n.checks = own_findings(data.get("findings"))
        n.failing_checks = sorted({c["code"] for c in n.checks if c["severity"] == "fail"})
        return n
    if kind == ERROR_KIND or ("error" in data and ("hostname" in data or "source" in data)):
        s = data.get("source")
        src = s if isinstance(s, dict) else data
        h = src.get("hostname")
        name = h if isinstance(h, str) and h else path.stem
        return Node(
            name=name,
            path=str(path),
            status="failed",
            created_at=parse_time(src.get("created_at")),
            error=str(data.get("error") or "the node's check could not run"),
        )
    if "verdict" in data and isinstance(data.get("source"), dict):  # check --format json without its scan
        src = data["source"]
        hn = src.get("hostname")
        n = Node(
            name=hn if isinstance(hn, str) and hn else path.stem,
            path=str(path),
            created_at=parse_time(src.get("created_at")),
        )
        n.failing_checks = sorted(c for c in data.get("failing") or [] if isinstance(c, str))
        n.notes.append("check report only (no facts to compare): save the scan too with check --json FILE")
        return n
    return Node(
        name=path.stem,
        path=str(path),
        status="failed",
        error=f"not a gpuadvisor scan, check report or failure record (kind {kind!r})",
    )


SECTIONS = {
    "host": dict,
    "source": dict,
    "software": dict,
    "topology": dict,
    "gpus": list,
    "measurements": list,
    "findings": list,
}


def _malformed(data: dict[str, Any]) -> str | None:
    """What is wrong with the shape of a scan's sections (None: nothing); null is a section not recorded."""
    for key, typ in SECTIONS.items():
        v = data.get(key)
        if v is not None and not isinstance(v, typ):
            return f"{key!r} is {type(v).__name__}, not {'an object' if typ is dict else 'a list'}"
    for key in ("gpus", "measurements", "findings"):
        if any(not isinstance(x, dict) for x in data.get(key) or []):
            return f"{key!r} holds an entry that is not an object"
    return None


def own_findings(raw: Any) -> list[dict[str, Any]]:
    """The node's own fail and warn findings: code, severity, name, message and GPUs (wrong types dropped)."""
    out: list[dict[str, Any]] = []
    for f in raw if isinstance(raw, list) else []:
        if not isinstance(f, dict) or f.get("severity") not in ("fail", "warn") or not isinstance(f.get("code"), str):
            continue
        gpus = f.get("gpus")
        out.append(
            {
                "code": f["code"],
                "severity": f["severity"],
                "name": f.get("name") if isinstance(f.get("name"), str) else "",
                "message": f.get("message") if isinstance(f.get("message"), str) else "",
                "gpus": [g for g in gpus if isinstance(g, int) and not isinstance(g, bool)]
                if isinstance(gpus, list)
                else [],
            }
        )
    return out


def _name(data: dict[str, Any], path: Path) -> str:
    ho = data.get("host")
    h = ho.get("hostname") if isinstance(ho, dict) else None
    return h if isinstance(h, str) and h else path.stem


def parse_scan(text: str, origin: str) -> Any:
    """The scan's JSON, refused as gpuadvisor.inputs.loads_json refuses it where it matters to the fleet view, at a
    third of its cost: NaN, Infinity and floats beyond the double range (1e400) where they are read, nesting
    deeper than the parser's recursion limit, and (through the full check) escaped lone surrogates. Integers are
    not range-checked here: the fleet view reads only small counts and indexes, and checks their types."""
    if "\\ud" in text or "\\uD" in text:  # an escaped UTF-16 surrogate: the full check tells a pair from a lone one
        return loads_json(text, origin, "a gpuadvisor scan")
    try:
        return json.loads(text, parse_float=_float, parse_constant=_constant)
    except _Bad as e:
        raise InputError(f"{origin}: {e.why}") from None
    except RecursionError:
        raise InputError(f"{origin}: nested too deeply to be a gpuadvisor scan") from None
    except json.JSONDecodeError as e:
        raise InputError(
            f"{origin}: not JSON (line {e.lineno}, column {e.colno}: {e.msg}); expected a gpuadvisor scan"
        ) from None
    except ValueError as e:  # an integer of more digits than Python converts
        raise InputError(f"{origin}: {str(e)[:100]}") from None


def _failed(p: Path, why: str) -> Node:
    return Node(name=p.stem, path=str(p), status="failed", error=why)


def read_node(p: Path) -> Node:
    """One file as a node; anything wrong with it (a link out of the scans directory, too large, not UTF-8, not
    JSON, NaN or Infinity, nested too deep, fields of the wrong type) is a failed node naming the file."""
    if p in ESCAPES:
        return _failed(p, f"{p}: a symbolic link to {os.path.realpath(p)}, outside the scans directory: not followed")
    try:
        data = parse_scan(decode_utf8(read_bytes(p, "a gpuadvisor scan (JSON)", SCAN_LIMIT), str(p), "a scan"), str(p))
    except InputError as e:
        return _failed(p, f"unreadable scan: {e}")
    try:
        return node_from(p, data)
    except (TypeError, ValueError, AttributeError, KeyError, IndexError) as e:
        return _failed(
            p,
            f"{p}: a field of the scan has an unexpected shape ({e.__class__.__name__}: "
            f"{str(e).splitlines()[0][:100] if str(e) else ''}); not a scan this gpuadvisor writes",
        )


def load_nodes(paths: list[str], files: list[Path] | None = None) -> dict[str, Node]:
    nodes: dict[str, Node] = {}
    for n in map(read_node, files if files is not None else files_of(paths)):
        old = nodes.get(n.name)
        if old is None:
            nodes[n.name] = n
            continue
        if (old.shape is not None or old.status == "failed") and (n.shape is not None or n.status == "failed"):
            # two scans (or a scan and a failed one) claim one host name: keep both apart by file, say so
            _duplicate(nodes, old, n)
            continue
        keep, drop = _newer(old, n)
        if keep.shape is None and drop.shape is not None and drop.status == "ok" and keep.status == "ok":
            keep, drop = drop, keep  # a check report beside its scan: the scan holds the facts
        keep.notes.append(f"also {drop.path} ({drop.status}{', older' if keep is not drop else ''}): not used")
        nodes[n.name] = keep
    return nodes


def _duplicate(nodes: dict[str, Node], old: Node, new: Node) -> None:
    i = 2
    while f"{new.name} [{i}]" in nodes:
        i += 1
    first = old.path or old.name
    new.name = f"{new.name} [{i}]"
    nodes[new.name] = new
    why = (
        f"two or more scans claim the host name {old.name.split(' [')[0]!r} ({first}, {new.path}): kept apart "
        "by file; give each node its own name (GPUADVISOR_HOSTNAME, or the scheduler's node name)"
    )
    for n in (old, new):
        if why not in n.notes:
            n.notes.append(why)
        n.duplicate = True


def _newer(a: Node, b: Node) -> tuple[Node, Node]:
    ta = a.created_at or dt.datetime.min.replace(tzinfo=dt.UTC)
    tb = b.created_at or dt.datetime.min.replace(tzinfo=dt.UTC)
    return (b, a) if tb > ta else (a, b)
