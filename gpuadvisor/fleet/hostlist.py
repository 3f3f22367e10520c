"""Slurm hostlist expressions: ``node[01-04,07]``, ``rack[1-2]-gpu[1-3]``, ``a,b,c`` (as ``scontrol show
hostnames`` expands them: zero padding kept, ranges in brackets, several bracket groups multiply)."""

from __future__ import annotations

import re

from gpuadvisor.errors import InputError

_HOSTLIST = re.compile(r"[A-Za-z0-9._\-\[\],\s]+")  # host name characters (RFC 1123), brackets, commas
MAX_HOSTS = 100_000  # host names one fleet run expects, all expressions and the nodes file together
MAX_GROUPS = 32  # bracket groups in one name (a real one has two or three: rack[1-4]-gpu[01-16])
NODES_FILE_LIMIT = 4 << 20  # a nodes file of 100,000 names is about 2 MiB


def _split_top(expr: str) -> list[str]:
    """Split at commas outside brackets."""
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in expr:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise InputError(f"--expect {expr[:60]!r}: ']' without '['")
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth:
        raise InputError(f"--expect {expr[:60]!r}: '[' without ']'")
    out.append("".join(cur))
    return [p.strip() for p in out if p.strip()]


def _range(body: str, expr: str) -> list[str]:
    vals: list[str] = []
    for part in body.split(","):
        part = part.strip()
        if "-" in part:
            lo, hi = part.split("-", 1)
            if not (lo.isdigit() and hi.isdigit()) or int(hi) < int(lo):
                raise InputError(f"--expect {expr[:60]!r}: bad range [{part}] (write e.g. node[01-64])")
            width = len(lo) if lo.startswith("0") else 0
            if len(lo) > 9 or len(hi) > 9 or int(hi) - int(lo) + 1 > MAX_HOSTS:
                raise InputError(
                    f"--expect {expr[:60]!r}: the range [{part}] names more than {MAX_HOSTS:,} hosts "
                    "(the limit of one fleet run); split the fleet"
                )
            vals += [str(i).zfill(width) for i in range(int(lo), int(hi) + 1)]
        elif part.isdigit():
            vals.append(part)
        else:
            raise InputError(f"--expect {expr[:60]!r}: bad range [{part}] (write e.g. node[01-64])")
    return vals


def _expand_one(term: str, expr: str) -> list[str]:
    """The names of one term: each bracket group multiplies them (iteratively, and at most MAX_GROUPS groups)."""
    if term.count("[") > MAX_GROUPS:
        raise InputError(
            f"--expect {expr[:60]!r}: more than {MAX_GROUPS} bracket groups in one name "
            "(write e.g. rack[1-4]-gpu[01-16])"
        )
    names = [""]
    rest = term
    while True:
        i = rest.find("[")
        if i < 0:
            return [n + rest for n in names]
        j = rest.index("]", i)
        head, vals = rest[:i], _range(rest[i + 1 : j], expr)
        if len(vals) * len(names) > MAX_HOSTS:
            raise InputError(
                f"--expect {expr[:60]!r}: names more than {MAX_HOSTS:,} hosts (the limit of one fleet run); "
                "split the fleet"
            )
        names = [n + head + v for n in names for v in vals]
        rest = rest[j + 1 :]


def expand(expr: str) -> list[str]:
    """Every host name of the expression, in order, without duplicates."""
    names: list[str] = []
    for term in _split_top(expr):
        names += _expand_one(term, expr)
        if len(names) > MAX_HOSTS:
            raise InputError(
                f"--expect {expr[:60]!r}: names more than {MAX_HOSTS:,} hosts (the limit of one "
                "fleet run); "
                "split the fleet"
            )
    return list(dict.fromkeys(names))


def read_nodes_file(path: str) -> list[str]:
    """One host name or hostlist expression per line; '#' starts a comment."""
    from gpuadvisor.inputs import read_text

    text = read_text(path, "a nodes file (one host name or hostlist per line)", NODES_FILE_LIMIT)
    names: list[str] = []
    for n, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if line and not _HOSTLIST.fullmatch(line):
            bad = next(c for c in line if not _HOSTLIST.fullmatch(c))
            raise InputError(
                f"{path} line {n}: {line[:60]!r} is not a host name or hostlist (character {bad!r}); "
                "give one name or hostlist such as node[01-64] per line"
            )
        if line:
            try:
                names += expand(line)
            except InputError as e:
                raise InputError(f"{path} line {n}: {e}") from None
        if len(names) > MAX_HOSTS:
            raise InputError(
                f"{path}: names more than {MAX_HOSTS:,} hosts (the limit of one fleet run); split the fleet"
            )
    return list(dict.fromkeys(names))
