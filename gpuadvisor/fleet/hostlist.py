"""Slurm hostlist expressions: ``node[01-04,07]``, ``rack[1-2]-gpu[1-3]``, ``a,b,c`` (as ``scontrol show
hostnames`` expands them: zero padding kept, ranges in brackets, several bracket groups multiply)."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.errors import InputError


def _split_top(expr: str) -> list[str]:
    """Split at commas outside brackets."""
    out, depth, cur = [], 0, []
    for ch in expr:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise InputError(f"--expect {expr!r}: ']' without '['")
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth:
        raise InputError(f"--expect {expr!r}: '[' without ']'")
    out.append("".join(cur))
    return [p.strip() for p in out if p.strip()]


def _range(body: str, expr: str) -> list[str]:
    vals: list[str] = []
    for part in body.split(","):
        part = part.strip()
        if "-" in part:
            lo, hi = part.split("-", 1)
            if not (lo.isdigit() and hi.isdigit()) or int(hi) < int(lo):
                raise InputError(f"--expect {expr!r}: bad range [{part}] (write e.g. node[01-64])")
            width = len(lo) if lo.startswith("0") else 0
            vals += [str(i).zfill(width) for i in range(int(lo), int(hi) + 1)]
        elif part.isdigit():
            vals.append(part)
        else:
            raise InputError(f"--expect {expr!r}: bad range [{part}] (write e.g. node[01-64])")
    return vals


def _expand_one(term: str, expr: str) -> list[str]:
    i = term.find("[")
    if i < 0:
        return [term]
    j = term.index("]", i)
    head, body, tail = term[:i], term[i + 1 : j], term[j + 1 :]
    rest = _expand_one(tail, expr)
    return [head + v + r for v in _range(body, expr) for r in rest]


def expand(expr: str) -> list[str]:
    """Every host name of the expression, in order, without duplicates."""
    names: list[str] = []
    for term in _split_top(expr):
        names += _expand_one(term, expr)
    return list(dict.fromkeys(names))


def read_nodes_file(path: str) -> list[str]:
    """One host name or hostlist expression per line; '#' starts a comment."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise InputError(f"{path}: cannot read the nodes file ({e.strerror or e})") from None
    names: list[str] = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            names += expand(line)
    return list(dict.fromkeys(names))
