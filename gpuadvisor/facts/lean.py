"""The lean load: the sections of a saved scan the fleet view reads, into a ``Rig``, without the full loader's
strictness and at a fraction of its cost (the fleet reads tens of thousands of scans in one run).

``load_lean(path)`` reads a node's file (at most ``SCAN_LIMIT`` bytes of UTF-8 JSON; NaN, Infinity, floats beyond
the double range and lone surrogates refused) and gives either a ``Rig`` or a ``NodeRecord`` (the failure record
a node wrote when its check could not run, or a ``check --format json`` report without its scan). Anything else,
a scan whose sections have the wrong shape, or a scan of another schema version, is a ``Refused`` naming why.

The Rig holds only what the fleet compares: ``source.created_at``; the host's name, CPU, sockets, kernel and OS;
the software versions; per GPU its index, name, modes, power limit, PCIe generation and widths and its NVLinks'
state and far end; the topology's NICs; the measurements (kind, status, GPUs, hosts, values, sizes and the fields
that name a figure); the findings (code, severity, name, message, GPUs); the RDMA ports. A value of the wrong type
is left unset (not recorded), as if the scan had not read it; every other field keeps its default.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from gpuadvisor import inputs
from gpuadvisor.errors import InputError
from gpuadvisor.facts import lean_fast
from gpuadvisor.facts.beyond import Network, RdmaPort, Storage, StoragePath
from gpuadvisor.facts.lean_fast import BANDWIDTH, KIND_FIELDS, NUM
from gpuadvisor.facts.measure import COLLECTIVES, Finding, Measurement, SweepRow
from gpuadvisor.facts.model import KIND, SCHEMA_VERSION, FactsError, Gpu, Host, NvLink, Pcie, Software, Source
from gpuadvisor.facts.rig import Rig
from gpuadvisor.facts.scanfile import Unphysical, from_section, negative

_orjson: Any
try:  # the fast parser, where installed (a dependency); the standard library's otherwise, with the same results
    import orjson as _orjson
except ImportError:  # the tests run both ways (_orjson set to None)
    _orjson = None

ERROR_KIND = "gpuadvisor-node-error"
# The text mapped to what can make a number out of range: digits "0", "." "p", e/E "e", "-" "m", what a JSON number
# follows (":", ",", "[", whitespace) "c", any other byte "x".
_CLASSES = bytearray(b"x" * 256)
# A "+" (only in an exponent, outside strings) reads "0": "1e+400" reads "0e0000". Whitespace reads "c": a number
# follows it as it follows ":", "," or "[".
for _c, _to in ((b"0123456789+", b"0"), (b".", b"p"), (b"eE", b"e"), (b"-", b"m"), (b":,[ \t\n\r", b"c")):
    for _b in _c:
        _CLASSES[_b] = _to[0]
_TABLE = bytes(_CLASSES)


def _out_of_range(text: str) -> bool:
    """Whether the text may hold an integer beyond 2**64 (a run of 20 digits) or a float beyond the double range
    (a number with a positive exponent of three digits): linear, a few passes over the bytes in C (no float this
    gpuadvisor writes has either; a hex string in a UUID may look like an exponent, so one is checked for the
    number's start). True sends the text to the full check, which tells."""
    b = text.encode("utf-8", "surrogatepass").translate(_TABLE)
    if b"00000000000000000000" in b:
        return True
    i = b.find(b"e000")
    while i >= 0:  # is it a number's exponent (digits back to a "c")?
        j = i - 1
        while j >= 0 and b[j] in b"0p":
            j -= 1
        if j < i - 1 and (b[j] == 99 or b[j - 1 : j + 1] == b"cm"):  # 99: "c"
            return True
        i = b.find(b"e000", i + 1)
    return False


def _long_digit_run(data: bytes) -> bool:
    """Whether the bytes hold 20 digits in a row not after a decimal point: an integer that may be beyond 2**64,
    refused by the full check (the fraction of a small float, 0.00026581605475592483, is no such integer)."""
    b = data.translate(_TABLE)
    i = b.find(_RUN)
    while i >= 0:
        j = i
        while j > 0 and b[j - 1] == 48:  # 48: "0", back to the run's start
            j -= 1
        if j == 0 or b[j - 1] != 112:  # 112: "p", a decimal point
            return True
        i += 20
        while i < len(b) and b[i] == 48:  # past the fraction's digits
            i += 1
        i = b.find(_RUN, i)
    return False


_RUN = b"0" * 20


# The sections the lean load reads and the JSON type each must have (null: a section not recorded).
SECTIONS: dict[str, type] = {
    "host": dict,
    "source": dict,
    "software": dict,
    "topology": dict,
    "gpus": list,
    "measurements": list,
    "findings": list,
}


class Refused(FactsError):
    """A node's file that is not a scan the lean load reads; ``host`` is the scan's host name where it has one."""

    def __init__(self, why: str, host: str | None = None) -> None:
        super().__init__(why)
        self.why = why
        self.host = host


@dataclass(slots=True)
class NodeRecord:
    """A node's file that holds no facts: ``kind`` "error" (a failure record, or a report with an error field:
    the node could not scan) or "check" (a check report: its verdict's failing codes only)."""

    kind: str
    hostname: str | None = None
    created_at: str | None = None
    error: str | None = None
    failing: list[str] = field(default_factory=list)


def read_json(path: Path, limit: int | None = None, regular_only: bool = False) -> Any:
    """A node's file parsed; one InputError naming the file when it is larger than ``limit`` (default
    ``inputs.SCAN_LIMIT``), not UTF-8 or not JSON (``regular_only``: or not a regular file; never blocks)."""
    return parse_bytes(read_bytes(path, limit, regular_only), path)


def read_bytes(path: Path, limit: int | None = None, regular_only: bool = False) -> bytes:
    """A node's file as bytes (see ``read_json``)."""
    return inputs.read_bytes(
        path, "a gpuadvisor scan (JSON)", inputs.SCAN_LIMIT if limit is None else limit, regular_only=regular_only
    )


def parse_bytes(data: bytes, path: Path) -> Any:
    """A node's file's bytes parsed (see ``read_json``)."""
    fast = parse_fast(data)
    if fast is not _SLOW:
        return fast
    text = inputs.decode_utf8(data, str(path), "a scan")
    return parse_scan(text, str(path))


def fast_rig(data: bytes) -> Rig | None:
    """The Rig ``from_json(read_json(...))`` gives for a well-formed scan of this version, decoded straight from
    its bytes (facts.lean_fast: the unread sections skipped); None for every other file, which then takes that
    road."""
    scan = fast_decode(data)
    return None if scan is None else fast_facts(scan)


def fast_decode(data: bytes) -> msgspec.Struct | None:
    """The first half of ``fast_rig``: the read sections decoded (None: the file takes the standard road)."""
    return lean_fast.decode(data, _long_digit_run)


def fast_facts(scan: msgspec.Struct) -> Rig | None:
    """The second half of ``fast_rig``: the lean Rig of the decoded sections."""
    try:
        section = scan.__getattribute__  # a defstruct's fields, by name
        return _assemble(section, lambda: list(map(lean_fast.measurement, section("measurements") or ())))
    except Unphysical:
        return None  # refused the standard way, with its wording


_SLOW = object()


def parse_fast(data: bytes) -> Any:
    """The scan's JSON parsed by orjson where it is installed and the result is certainly what ``parse_scan`` gives
    (about three times faster); else ``_SLOW``: the bytes go the standard library's way, which also words what is
    wrong. orjson refuses what the full check refuses (invalid UTF-8, NaN and Infinity, floats beyond the double
    range, lone surrogates, a byte-order mark, nesting deeper than 1024 levels) and parses every other number to
    the same value, except integers beyond 64 bits, which it makes floats: a run of 19 digits anywhere (no scan
    holds one) sends the text the slow way. (Python's parser stops near its recursion limit, 1000 frames less the
    caller's: a file nested between that and 1024 levels deep parses here, fails there.)"""
    if _orjson is None:
        return _SLOW
    try:
        parsed = _orjson.loads(data)
    except (ValueError, RecursionError):
        return _SLOW
    return _SLOW if _LONG_RUN in data.translate(_TABLE) else parsed


_LONG_RUN = b"0" * 19  # 19 digits in a row, as _TABLE writes them


def parse_scan(text: str, origin: str) -> Any:
    """The scan's JSON, refused as gpuadvisor.inputs.loads_json refuses it, at a fraction of its cost: NaN and
    Infinity, nesting deeper than the parser's recursion limit, and (through the full check, where the text holds
    a number that might be one) integers beyond 2**64, floats beyond the double range (1e400) and escaped lone
    surrogates."""
    if "\\ud" in text or "\\uD" in text or _out_of_range(text):
        return inputs.loads_json(text, origin, "a gpuadvisor scan")
    try:
        return json.loads(text, parse_constant=inputs._constant)
    except inputs._Bad as e:
        raise InputError(f"{origin}: {e.why}") from None
    except RecursionError:
        raise InputError(f"{origin}: nested too deeply to be a gpuadvisor scan") from None
    except json.JSONDecodeError as e:
        raise InputError(
            f"{origin}: not JSON (line {e.lineno}, column {e.colno}: {e.msg}); expected a gpuadvisor scan"
        ) from None
    except ValueError as e:  # an integer of more digits than Python converts
        raise InputError(f"{origin}: {str(e)[:100]}") from None


def load_lean(path: Path) -> Rig | NodeRecord:
    """A node's file read (InputError) and taken apart (``Refused``): see ``from_json``."""
    return from_json(read_json(path), path)


def from_json(data: Any, path: Path) -> Rig | NodeRecord:
    """A scan's sections the fleet reads as a Rig, a failure record or check report as a NodeRecord; anything else
    is ``Refused`` (its message is what the fleet says of the file)."""
    if not isinstance(data, dict):
        raise Refused("not a gpuadvisor scan (top level is not an object)")
    kind = data.get("kind")
    if kind == KIND:
        bad = malformed(data)
        if bad:
            raise Refused(f"{path}: {bad}: not a scan this gpuadvisor writes", _hostname(data))
        if data.get("schema_version") != SCHEMA_VERSION:
            raise Refused(
                f"scan schema_version {data.get('schema_version')!r}: this gpuadvisor reads version {SCHEMA_VERSION}",
                _hostname(data),
            )
        try:
            return lean_rig(data)
        except Unphysical as e:
            raise Refused(f"{path}: {e}: not a scan this gpuadvisor writes", _hostname(data)) from None
    if kind == ERROR_KIND or ("error" in data and ("hostname" in data or "source" in data)):
        s = data.get("source")
        src = s if isinstance(s, dict) else data
        return NodeRecord(
            "error",
            _str(src.get("hostname")),
            _str(src.get("created_at")),
            str(data.get("error") or "the node's check could not run"),
        )
    if "verdict" in data and isinstance(data.get("source"), dict):  # check --format json without its scan
        src = data["source"]
        failing = sorted(c for c in data.get("failing") or [] if isinstance(c, str))
        return NodeRecord("check", _str(src.get("hostname")), _str(src.get("created_at")), failing=failing)
    raise Refused(f"not a gpuadvisor scan, check report or failure record (kind {kind!r})")


def malformed(data: dict[str, Any]) -> str | None:
    """What is wrong with the shape of a scan's sections (None: nothing); null is a section not recorded."""
    for key, typ in SECTIONS.items():
        v = data.get(key)
        if v is not None and not isinstance(v, typ):
            return f"{key!r} is {type(v).__name__}, not {'an object' if typ is dict else 'a list'}"
    for key in ("gpus", "measurements", "findings"):
        if any(not isinstance(x, dict) for x in data.get(key) or []):
            return f"{key!r} holds an entry that is not an object"
    return None


# -- typed values: a value of another type is None (not recorded) --------------------------------------------------


def _str(v: Any) -> str | None:
    return v if type(v) is str else None


def _int(v: Any) -> int | None:
    return v if type(v) is int else None


def _num(v: Any) -> float | None:
    return v if type(v) is float or type(v) is int else None  # finite: parse_scan refuses the rest


def _bool(v: Any) -> bool | None:
    return v if type(v) is bool else None


def _strs(v: Any) -> list[str]:
    return [x for x in v if type(x) is str] if type(v) is list else []


def _obj(v: Any) -> dict[str, Any]:
    return v if type(v) is dict else {}


_new = object.__new__


def _lean(cls: type, values: dict[str, Any]) -> Any:
    """An instance of the dataclass ``cls`` without running its ``__init__`` (five default factories per
    Measurement, 184 measurements in an 8-GPU scan): ``values`` must hold every field with a default factory;
    every other field it leaves out reads as its default (the class attribute)."""
    obj: Any = _new(cls)
    obj.__dict__ = values
    return obj


def lean_rig(data: dict[str, Any]) -> Rig:
    """The sections the fleet reads (see the module's docstring) of a scan whose sections have the right shape."""
    return _assemble(data.get, lambda: [_measurement(m) for m in data.get("measurements") or []])


def _assemble(section: Callable[[str], Any], measurements: Callable[[], list[Measurement]]) -> Rig:
    """The lean Rig from a scan's sections (``section(name)``: None where not recorded) and its figures."""
    host, software, src = _obj(section("host")), _obj(section("software")), _obj(section("source"))
    _amounts(host, "host")
    rig = Rig(
        source=Source(created_at=_str(src.get("created_at"))),
        host=Host(**_pick(host, _HOST)),
        software=Software(**_pick(software, _SOFTWARE)),
        gpus=[_gpu(g, i) for i, g in enumerate(section("gpus") or [])],
        measurements=measurements(),
        findings=[f for f in map(_finding, section("findings") or []) if f is not None],
    )
    rig.topology.nics = _strs(_obj(section("topology")).get("nics"))
    ports = _obj(section("network")).get("rdma_ports")
    if type(ports) is list:  # a port without a device name is not one the fleet can compare
        rig.network = Network(rdma_ports=[_port(p) for p in ports if type(p) is dict and type(p.get("device")) is str])
    storage = section("storage")
    if type(storage) is dict and type(storage.get("paths")) is list:
        rig.storage = _storage(storage)
    return rig


def _amounts(section: dict[str, Any], where: str) -> None:
    """Refuse a negative physical amount among a section's own values (``Unphysical``)."""
    for k, v in section.items():
        if (type(v) is int or type(v) is float) and v < 0 and (bad := negative(k, v, f"{where}.{k}")) is not None:
            raise bad


def _storage(section: dict[str, Any]) -> Storage:
    """The storage paths a benchmark measured (``bench --storage``, or imported fio results), read by the full
    loader as it reads them (one path of the wrong shape is left out: not recorded); the paths without a
    measurement and the page cache are not compared across nodes, so not kept."""
    paths = []
    for i, p in enumerate(section["paths"]):
        if type(p) is dict and type(p.get("bench")) is dict:
            try:
                paths.append(from_section(StoragePath, p, f"storage.paths[{i}]"))
            except Unphysical:
                raise
            except FactsError:
                continue
    return _lean(Storage, {"unavailable": {}, "paths": paths})


_S: frozenset[type] = frozenset({str})
_I: frozenset[type] = frozenset({int})
_B: frozenset[type] = frozenset({bool})
_N: frozenset[type] = frozenset({int, float})
# The fields the fleet reads of each section, and the JSON types each may have.
_HOST = {"hostname": _S, "cpu_model": _S, "sockets": _I, "kernel": _S, "os": _S}
_SOFTWARE = dict.fromkeys(
    ("driver_version", "cuda_driver_version", "nccl_version", "torch_version", "torch_cuda_version"), _S
)
_GPU = {"name": _S, "persistence_mode": _B, "mig_mode": _B, "ecc_enabled": _B, "power_limit_w": _N}
_PCIE = dict.fromkeys(("max_gen", "gpu_max_gen", "max_width", "current_width"), _I)


def _pick(section: dict[str, Any], fields: dict[str, frozenset[type]]) -> dict[str, Any]:
    """The fields of a section that hold a value of their type (the others keep their default: not recorded)."""
    return {k: v for k, allowed in fields.items() if type(v := section.get(k)) in allowed}


def _gpu(g: dict[str, Any], i: int) -> Gpu:
    _amounts(g, f"gpus[{i}]")
    links = g.get("nvlinks")
    index = _int(g.get("index"))
    return Gpu(
        index=i if index is None else index,
        pcie=Pcie(**_pick(_obj(g.get("pcie")), _PCIE)),
        nvlinks=[_nvlink(n) for n in links if type(n) is dict] if type(links) is list else [],
        **_pick(g, _GPU),
    )


_LINKS: dict[tuple[bool | None, str | None], NvLink] = {}  # one NvLink per (state, far end): ~144 links a scan
_LINKS_MAX = 10_000


def _nvlink(n: dict[str, Any]) -> NvLink:
    """A link's state and far end, the one NvLink of that pair shared by every lean Rig (read, never written: the
    fleet only compares them)."""
    active, far = n.get("active"), n.get("remote_device_type")
    key = (active if type(active) is bool else None, far if type(far) is str else None)
    link = _LINKS.get(key)
    if link is None:
        link = _lean(NvLink, {"unavailable": {}, "errors": {}, "active": key[0], "remote_device_type": key[1]})
        if len(_LINKS) < _LINKS_MAX:
            _LINKS[key] = link
    return link


def _measurement(m: dict[str, Any]) -> Measurement:
    """What names and values a figure (184 measurements in an 8-GPU scan): kind, status, world size, GPUs, hosts
    (with the notes of a run on several hosts), the values of its kind, and a collective's rows."""
    get = m.get
    d: dict[str, Any] = {"unavailable": {}}
    kind = get("kind")
    if type(kind) is str:
        d["kind"] = kind
    d["status"] = v if type(v := get("status", "ok")) is str else ""
    d["gpus"] = [g for g in v if type(g) is int] if type(v := get("gpus")) is list else []
    d["hosts"] = hosts = [h for h in v if type(h) is str] if type(v := get("hosts")) is list and v else []
    d["notes"] = [n for n in v if type(n) is str] if hosts and type(v := get("notes")) is list else []
    if type(v := get("world_size")) is int:
        d["world_size"] = v
    for name, allowed in KIND_FIELDS.get(kind, BANDWIDTH) if type(kind) is str else BANDWIDTH:
        if type(v := get(name)) in allowed:
            if allowed is NUM and v < 0:  # type: ignore[operator]  # an int or float: its type was checked
                raise Unphysical(f"measurements: {name} {v} is negative; a {name} cannot be")
            d[name] = v
    d["rows"] = (
        [_row(r) for r in v if type(r) is dict] if kind in COLLECTIVES and type(v := get("rows")) is list else []
    )
    obj: Measurement = _new(Measurement)
    obj.__dict__ = d
    return obj


def _row(r: dict[str, Any]) -> SweepRow:
    size, bw = r.get("size_bytes"), r.get("busbw_gbps")
    if (type(bw) is float or type(bw) is int) and bw < 0:
        raise Unphysical(f"measurements: rows busbw_gbps {bw} is negative; a busbw_gbps cannot be")
    return _lean(
        SweepRow,
        {
            "size_bytes": size if type(size) is int else 0,
            "busbw_gbps": bw if type(bw) is float or type(bw) is int else 0.0,
        },
    )


def _finding(f: dict[str, Any]) -> Finding | None:
    code, severity = f.get("code"), f.get("severity")
    if type(code) is not str or type(severity) is not str:
        return None
    gpus = f.get("gpus")
    return Finding(
        code=code,
        severity=severity,
        name=_str(f.get("name")) or "",
        message=_str(f.get("message")) or "",
        gpus=[g for g in gpus if type(g) is int] if type(gpus) is list else [],
    )


def _port(p: dict[str, Any]) -> RdmaPort:
    _amounts(p, "network.rdma_ports")
    return RdmaPort(
        device=p["device"],
        port=_int(p.get("port")),
        state=_str(p.get("state")),
        rate_gbps=_num(p.get("rate_gbps")),
    )


def _hostname(data: dict[str, Any]) -> str | None:
    h = _obj(data.get("host")).get("hostname")
    return h if type(h) is str and h else None
