"""--redact: strip what identifies a machine, a site or a person before a scan or report is shared.

What counts as an identifier: hostnames (this host's, and any other a multi-node log, an environment variable
or a note names), IP addresses (v4 and v6), MAC addresses and InfiniBand GUIDs, GPU and MIG UUIDs (and bare
UUIDs), serial numbers and board/module ids, user names in paths (``/home/x``, ``/Users/x``, ``~x``) and in
the environment, the Slurm job id, and the paths of the input files (kept as their base name).

How: the identifying fields themselves (hostname, GPU uuid and serial) become null with the reason
"redacted", like any other missing fact; then every string of the whole Rig -- every field of every object,
list and map, the keys of maps included (``software.env``, ``origins``, ``advice``, findings' observed values)
-- is rewritten: identifiers already known (from those fields, the environment and the notes) by literal
match, the rest by pattern. Each distinct identifier gets one stable pseudonym for the whole output
(``redacted-host-2``, ``redacted-ip-1``, ``GPU-redacted-3`` for GPU 3's UUID), so cross-references still
match: a UUID in ``CUDA_VISIBLE_DEVICES`` and in a note map to the same token. Loopback addresses and
``localhost`` are not identifiers and are kept.

Public API: ``redact(rig, inputs=()) -> Redactor`` (in place; the Redactor then rewrites anything else an
output shows, e.g. a policy path: ``r.text(s)``, ``r.walk(obj)``).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import re
from collections.abc import Iterable
from typing import Any

from gpuadvisor.facts import Rig
from gpuadvisor.importers.fragments import HEX, UUID_BODY

REDACTED = "redacted"

# GPU-<uuid>, MIG-GPU-<uuid>/gi/ci (old MIG form), MIG-<uuid>, or a bare UUID.
_UUID_RE = re.compile(
    rf"(?<![0-9A-Za-z-])(?:(MIG-GPU-|MIG-|GPU-)({UUID_BODY})(/\d+/\d+)?|({UUID_BODY}))(?![0-9A-Za-z-])"
)
_MAC_RE = re.compile(rf"(?<![0-9A-Za-z:.-]){HEX}{{2}}([:-]){HEX}{{2}}(?:\1{HEX}{{2}}){{4,18}}(?![0-9A-Za-z:-])")
_GUID_RE = re.compile(rf"(?<![0-9A-Za-z:.-])(?:{HEX}{{4}}(?::{HEX}{{4}}){{3}}|0x{HEX}{{16}})(?![0-9A-Za-z:-])")
_IPV4_RE = re.compile(r"(?<![\d.])(\d{1,3}(?:\.\d{1,3}){3})(?!\.?\d)")
_IPV6_RE = re.compile(
    r"(?<![0-9A-Za-z:.])(?=[0-9A-Fa-f:.]*:[0-9A-Fa-f.]*:)([0-9A-Fa-f:.]*[0-9A-Fa-f:])(%[\w.-]+)?(?![0-9A-Za-z:])"
)
_USER_PATH_RE = re.compile(r"(?<![\w.-])(/home/|/Users/|/usr/home/|/export/home/|/u/)([^/\s:'\"\\,;()]+)")
_TILDE_RE = re.compile(r"(?<![\w/.~-])~([A-Za-z_][\w.-]*)")
_KEYED_RE = re.compile(
    r"(?i)\b(serial(?: number)?|board id|module id|node guid|system guid|port guid|guid)(\s*[:=]\s*)"
    r"([^\s,;)\]'\"]+)"
)
# Where hostnames of other machines turn up in notes and logs.
_HOST_CONTEXTS = (
    re.compile(r"\b\d+ hosts \(([^)]*)\)"),  # imported multi-node nccl-tests: "2 hosts (a, b)"
    re.compile(r"\bthis host \(([^)\s]+)\)"),
    re.compile(r"\bgpus lists those of ([^\s;,()]+)"),
    re.compile(r"\bRank\s+\d+\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+(\S+)\s+device"),  # an nccl-tests rank line
    re.compile(r"(?i)\bhost(?:name)?\s*[:=]\s*([A-Za-z0-9][\w.-]*)"),
)
# Environment variables whose value is a host (list): harvested as hostnames, then pseudonymised whole.
_HOST_ENV = re.compile(r"(^|_)(HOSTNAME|HOST|HOSTS|HOSTID|NODENAME|NODELIST|ADDR|IPADDR|COMM_ID|URI)$")
_USER_ENV = re.compile(r"(^|_)(USER|LOGNAME|ACCOUNT)$")
_ID_ENV = re.compile(r"^SLURM_(JOB_ID|JOBID|ARRAY_JOB_ID|STEP_ID|CLUSTER_NAME|JOB_NAME)$")
_NOT_HOSTS = {"localhost", "localhost.localdomain", "none", "unknown", "n/a", "...", ""}
_ORIGIN_RE = re.compile(r"^(.*?):\d+(?:[-,]\d+)*(?: \(.*\))?$")


class Redactor:
    """The pseudonym table of one output, and the rewriting of strings and objects with it."""

    def __init__(self) -> None:
        self._tokens: dict[tuple[str, str], str] = {}
        self._counts: dict[str, int] = {}
        self._literals: dict[str, str] = {}  # exact text -> replacement
        self._literal_re: re.Pattern[str] | None = None

    # -- the table ---------------------------------------------------------------------------------------
    def token(self, kind: str, value: str, fmt: str = "redacted-{kind}-{n}") -> str:
        key = (kind, value.lower())
        if key not in self._tokens:
            self._counts[kind] = self._counts.get(kind, 0) + 1
            self._tokens[key] = fmt.format(kind=kind, n=self._counts[kind])
        return self._tokens[key]

    def literal(self, text: str | None, replacement: str, min_len: int = 2) -> None:
        if text and len(text) >= min_len and text not in self._literals:
            self._literals[text] = replacement
            self._literal_re = None

    def host(self, name: str) -> None:
        name = name.strip().strip("[]").rstrip(".")
        if name.lower() in _NOT_HOSTS or _is_ip(name) or not re.fullmatch(r"[A-Za-z0-9][\w.-]*", name):
            return
        tok = self.token("host", name)
        self.literal(name, tok)
        short = name.split(".")[0]
        if short != name and not short.isdigit():
            self.literal(short, self.token("host", short))

    def user(self, name: str) -> None:
        if name and name not in ("root",):
            self.literal(name, self.token("user", name), min_len=2)

    def input_path(self, path: str | os.PathLike[str] | None) -> None:
        """An input file or directory: shown by its base name only."""
        if not path:
            return
        p = os.fspath(path)
        base = os.path.basename(p.rstrip("/")) or p
        if p != base:
            self.literal(p, base)
            ap = os.path.abspath(p)
            if ap != p:
                self.literal(ap, base)

    # -- rewriting ---------------------------------------------------------------------------------------
    def text(self, s: str) -> str:
        if not s:
            return s
        if self._literals:
            if self._literal_re is None:
                alts = "|".join(re.escape(k) for k in sorted(self._literals, key=len, reverse=True))
                self._literal_re = re.compile(rf"(?<![0-9A-Za-z-])(?:{alts})(?![0-9A-Za-z-])")
            s = self._literal_re.sub(lambda m: self._literals[m.group(0)], s)
        s = _UUID_RE.sub(self._uuid, s)
        s = _KEYED_RE.sub(lambda m: m.group(1) + m.group(2) + self._keyed(m.group(1), m.group(3)), s)
        s = _MAC_RE.sub(lambda m: self.token("mac", m.group(0)), s)
        s = _GUID_RE.sub(lambda m: self.token("guid", m.group(0)), s)
        s = _IPV6_RE.sub(self._ipv6, s)
        s = _IPV4_RE.sub(self._ipv4, s)
        s = _USER_PATH_RE.sub(lambda m: m.group(1) + self.token("user", m.group(2)), s)
        s = _TILDE_RE.sub(lambda m: "~" + self.token("user", m.group(1)), s)
        return s

    def _uuid(self, m: re.Match[str]) -> str:
        prefix, uuid, mig_tail, bare = m.group(1), m.group(2), m.group(3), m.group(4)
        if bare is not None:
            own = self._tokens.get(("gpu-uuid", bare.lower()))
            return own or self.token("uuid", bare)
        if prefix == "MIG-":
            return self.token("mig", uuid, "MIG-redacted-{n}")
        own = self._tokens.get(("gpu-uuid", uuid.lower())) or self.token("gpu-uuid", uuid, "GPU-redacted-x{n}")
        return ("MIG-" + own + "/redacted") if prefix == "MIG-GPU-" or mig_tail else own

    def _keyed(self, key: str, value: str) -> str:
        if (
            value.upper() in ("N/A", "NONE", "[N/A]", "NOT", "UNKNOWN")
            or value.startswith("redacted-")
            or "-redacted-" in value
        ):
            return value
        return self.token("serial" if "serial" in key.lower() else "id", value)

    def _ipv4(self, m: re.Match[str]) -> str:
        ip = m.group(1)
        try:
            addr = ipaddress.IPv4Address(ip)
        except ValueError:
            return ip
        if addr.is_loopback or addr.is_unspecified:
            return ip
        return self.token("ip", str(addr))

    def _ipv6(self, m: re.Match[str]) -> str:
        text = m.group(0)
        cand = m.group(1)
        if "::" not in cand and cand.count(":") != 7 and not ("." in cand and cand.count(":") >= 2):
            return text
        try:
            addr = ipaddress.IPv6Address(cand)
        except ValueError:
            return text
        if addr.is_loopback or addr.is_unspecified or not re.search(r"[0-9a-fA-F]", cand):
            return text
        return self.token("ip", addr.compressed)

    def walk(self, obj: Any) -> Any:
        """Rewrite every string in ``obj`` (dataclasses, lists and dicts in place; keys too); returns it."""
        if isinstance(obj, str):
            return self.text(obj)
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            for f in dataclasses.fields(obj):
                v = getattr(obj, f.name)
                nv = self.walk(v)
                if nv is not v:
                    setattr(obj, f.name, nv)
            return obj
        if isinstance(obj, list):
            for i, v in enumerate(obj):
                nv = self.walk(v)
                if nv is not v:
                    obj[i] = nv
            return obj
        if isinstance(obj, tuple):
            return tuple(self.walk(v) for v in obj)
        if isinstance(obj, dict):
            items = [(self.walk(k) if isinstance(k, str) else k, self.walk(v)) for k, v in obj.items()]
            obj.clear()
            obj.update(items)
            return obj
        return obj

    # -- learning what to look for -------------------------------------------------------------------------
    def learn(self, rig: Rig, inputs: Iterable[str | os.PathLike[str] | None] = ()) -> None:
        if rig.host.hostname:
            self.host(rig.host.hostname)
        self._learn_gpus(rig)
        self._learn_env(rig.software.env)
        for p in (*rig.source.files, *inputs):
            self.input_path(p)
        for origin in rig.origins.values():
            m = _ORIGIN_RE.match(origin)
            if m:
                self.input_path(m.group(1))
        for s in _strings(rig):
            for rx in _HOST_CONTEXTS:
                for m in rx.finditer(s):
                    for name in m.group(1).split(","):
                        self.host(name)

    def _learn_gpus(self, rig: Rig) -> None:
        """The GPUs' UUIDs (as GPU-redacted-N where the index is known) and serials."""
        for g in rig.gpus:
            if g.uuid:
                m = re.search(UUID_BODY, g.uuid)
                if m:
                    self.token("gpu-uuid", m.group(0), f"GPU-redacted-{g.index}")
                known = self._tokens.get(("gpu-uuid", m.group(0).lower())) if m else None
                self.literal(g.uuid, known or self.token("uuid", g.uuid))
            if g.serial:
                self.literal(g.serial, self.token("serial", g.serial), min_len=4)

    def _learn_env(self, env: dict[str, str]) -> None:
        """The hosts (hostlists, host:port) and users the environment names."""
        for key, value in env.items():
            if _HOST_ENV.search(key):
                for piece in _expand_hostlist(value):
                    piece = re.sub(r"^\w+://", "", piece)
                    self.host(re.sub(r":\d+$", "", piece))  # host:port
            elif _USER_ENV.search(key):
                self.user(value)

    def env(self, env: dict[str, str]) -> None:
        """Values that are identifiers as a whole: hosts, users, job ids (before the string pass)."""
        for key, value in list(env.items()):
            if (
                _HOST_ENV.search(key)
                and "[" in value
                and "]" in value
                and not re.search(r"\[[0-9a-fA-F:.%\w]*:", value)
            ):
                env[key] = self.token("hostlist", value)  # a Slurm hostlist, node[01-04,07]
            elif _HOST_ENV.search(key) and value:
                if not all(_is_loopback(p) for p in re.split(r"[\s,;]+", re.sub(r":\d+", "", value)) if p):
                    env[key] = ",".join(self._host_value(p) for p in value.split(","))
            elif _USER_ENV.search(key) and value and value != "root":
                env[key] = self.token("user", value)
            elif _ID_ENV.search(key) and value:
                env[key] = self.token("id", value)

    def _host_value(self, piece: str) -> str:
        m = re.fullmatch(r"(\w+://)?(\[[^\]]+\]|[^:]+?)(:\d+)?", piece.strip())
        if not m:
            return self.text(piece)
        scheme, host, port = m.group(1) or "", m.group(2), m.group(3) or ""
        bare = host.strip("[]")
        if _is_ip(bare):
            return scheme + self.text(host) + port
        if bare in self._literals:
            return scheme + self._literals[bare] + port
        return scheme + self.token("host", bare) + port


def _expand_hostlist(value: str, limit: int = 4096) -> list[str]:
    """Host names in a list: "a,b c", and Slurm's hostlist form "node[01-03,07],gpu-x" (expanded, up to limit)."""
    out: list[str] = []
    for part in re.findall(r"[^\s,;\[]*(?:\[[^\]]*\][^\s,;\[]*)*", value):
        m = re.fullmatch(r"([^\[]*)\[([^\]]*)\](.*)", part)
        if not m or ":" in m.group(2):  # no brackets, or an IPv6 literal [fe80::1]:port
            if part:
                out.append(part)
            continue
        prefix, body, suffix = m.groups()
        for item in body.split(","):
            lo, _, hi = item.partition("-")
            if hi and lo.isdigit() and hi.isdigit() and int(hi) - int(lo) < limit:
                out += [f"{prefix}{i:0{len(lo)}d}{suffix}" for i in range(int(lo), int(hi) + 1)]
            else:
                out.append(prefix + item + suffix)
        if len(out) > limit:
            break
    return out[:limit]


def _is_ip(s: str) -> bool:
    try:
        ipaddress.ip_address(s.split("%")[0])
        return True
    except ValueError:
        return False


def _is_loopback(s: str) -> bool:
    s = s.strip("[]")
    return s.lower() in ("localhost",) or (_is_ip(s) and ipaddress.ip_address(s.split("%")[0]).is_loopback)


def _strings(obj: Any) -> Iterable[str]:
    if isinstance(obj, str):
        yield obj
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            yield from _strings(getattr(obj, f.name))
    elif isinstance(obj, list | tuple):
        for v in obj:
            yield from _strings(v)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _strings(k)
            yield from _strings(v)


def redact(rig: Rig, inputs: Iterable[str | os.PathLike[str] | None] = ()) -> Redactor:
    """Redact ``rig`` in place (see the module docstring); ``inputs``: the paths the command read (shown by
    base name). Returns the Redactor, to rewrite anything else the output shows with the same pseudonyms."""
    r = Redactor()
    r.learn(rig, inputs)
    if rig.host.hostname is not None:
        rig.host.missing("hostname", REDACTED)
    for g in rig.gpus:
        for f in ("uuid", "serial"):
            if getattr(g, f) is not None:
                g.missing(f, REDACTED)
    r.env(rig.software.env)
    r.walk(rig)
    return r
