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
from pathlib import Path
from typing import Any

from gpuadvisor.errors import InputError
from gpuadvisor.fleet import drift, figures, groups
from gpuadvisor.fleet.model import Node

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


def files_of(paths: list[str]) -> list[Path]:
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            out += sorted(q for q in p.rglob("*.json") if q.is_file())
        elif p.is_file():
            out.append(p)
        else:
            raise InputError(f"{raw}: no such file or directory (give the directory the nodes wrote their scans to)")
    return out


def node_from(path: Path, data: Any) -> Node:
    where = path.name
    if not isinstance(data, dict):
        return Node(name=path.stem, path=str(path), status="failed", error="not a gpuadvisor scan (top level is not an object)")
    kind = data.get("kind")
    if kind == SCAN_KIND:
        if data.get("schema_version") != 1:
            return Node(name=_name(data, path), path=str(path), status="failed",
                        error=f"scan schema_version {data.get('schema_version')!r}: this gpuadvisor reads version 1")
        src = data.get("source") if isinstance(data.get("source"), dict) else {}
        n = Node(name=_name(data, path), path=str(path), created_at=parse_time(src.get("created_at")))
        sh = groups.shape(data)
        if sh is not None:
            n.shape, n.shape_label = sh
            n.gpus, listed, active, nics = groups.counts(data)
            n.hw = {"listed": listed, "active": active, "nics": nics,
                    "index": [g.get("index", i) for i, g in enumerate(data["gpus"])]}
        else:
            n.notes.append("the scan lists no GPU")
        n.attrs = drift.attributes(data)
        n.figures, n.cross = figures.extract(data.get("measurements"), where)
        n.checks = own_findings(data.get("findings"))
        n.failing_checks = sorted({c["code"] for c in n.checks if c["severity"] == "fail"})
        return n
    if kind == ERROR_KIND or ("error" in data and ("hostname" in data or "source" in data)):
        src = data.get("source") if isinstance(data.get("source"), dict) else data
        name = src.get("hostname") if isinstance(src.get("hostname"), str) and src.get("hostname") else path.stem
        return Node(name=name, path=str(path), status="failed", created_at=parse_time(src.get("created_at")),
                    error=str(data.get("error") or "the node's check could not run"))
    if "verdict" in data and isinstance(data.get("source"), dict):  # check --format json without its scan
        src = data["source"]
        name = src.get("hostname") if isinstance(src.get("hostname"), str) and src.get("hostname") else path.stem
        n = Node(name=name, path=str(path), created_at=parse_time(src.get("created_at")))
        n.failing_checks = sorted(c for c in data.get("failing") or [] if isinstance(c, str))
        n.notes.append("check report only (no facts to compare): save the scan too with check --json FILE")
        return n
    return Node(name=path.stem, path=str(path), status="failed",
                error=f"not a gpuadvisor scan, check report or failure record (kind {kind!r})")


def own_findings(raw: Any) -> list[dict[str, Any]]:
    """The node's own fail and warn findings: code, severity, name, message and GPUs (wrong types dropped)."""
    out: list[dict[str, Any]] = []
    for f in raw if isinstance(raw, list) else []:
        if not isinstance(f, dict) or f.get("severity") not in ("fail", "warn") or not isinstance(f.get("code"), str):
            continue
        gpus = f.get("gpus")
        out.append({"code": f["code"], "severity": f["severity"],
                    "name": f.get("name") if isinstance(f.get("name"), str) else "",
                    "message": f.get("message") if isinstance(f.get("message"), str) else "",
                    "gpus": [g for g in gpus if isinstance(g, int) and not isinstance(g, bool)]
                    if isinstance(gpus, list) else []})
    return out


def _name(data: dict[str, Any], path: Path) -> str:
    host = data.get("host") if isinstance(data.get("host"), dict) else {}
    h = host.get("hostname")
    return h if isinstance(h, str) and h else path.stem


def read_node(p: Path) -> Node:
    try:
        data = json.loads(p.read_bytes())
    except (OSError, ValueError) as e:
        return Node(name=p.stem, path=str(p), status="failed",
                    error=f"unreadable scan ({e.__class__.__name__}: {str(e).splitlines()[0][:120]})")
    return node_from(p, data)


def load_nodes(paths: list[str]) -> dict[str, Node]:
    nodes: dict[str, Node] = {}
    for n in map(read_node, files_of(paths)):
        old = nodes.get(n.name)
        if old is None:
            nodes[n.name] = n
            continue
        keep, drop = _newer(old, n)
        if keep.shape is None and drop.shape is not None and drop.status == "ok" and keep.status == "ok":
            keep, drop = drop, keep  # a check report beside its scan: the scan holds the facts
        keep.notes.append(f"also {drop.path} ({drop.status}{', older' if keep is not drop else ''}): not used")
        nodes[n.name] = keep
    return nodes


def _newer(a: Node, b: Node) -> tuple[Node, Node]:
    ta = a.created_at or dt.datetime.min.replace(tzinfo=dt.UTC)
    tb = b.created_at or dt.datetime.min.replace(tzinfo=dt.UTC)
    return (b, a) if tb > ta else (a, b)
