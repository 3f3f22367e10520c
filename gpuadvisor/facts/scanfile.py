"""A saved scan read back into a ``Rig``: ``load`` (a file), ``from_dict`` (parsed JSON), each field checked
against the model's type hints; a malformed scan is one ``FactsError`` naming the file and the field."""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from pathlib import Path
from typing import Any

from gpuadvisor.facts.model import KIND, NOT_RECORDED, SCHEMA_VERSION, FactsError, Unavailable
from gpuadvisor.facts.rig import Rig

_HINTS: dict[type, dict[str, Any]] = {}

# A field that holds a physical amount (a size, rate, power, time, clock or count) is never negative in a scan.
_AMOUNT_SUFFIXES = ("_bytes", "_w", "_watts", "_gbps", "_iops", "_tflops", "_us", "_mhz", "_gts", "_s")
_AMOUNT_PREFIXES = ("ecc_errors_", "retired_pages_", "remapped_rows_", "aer_", "cores_")
_AMOUNTS = {"sockets", "count", "iters", "warmup_iters", "world_size", "lines_read", "iodepth", "errors", "ratio"}
_AMOUNT: dict[str, bool] = {}


class Unphysical(FactsError):
    """A scan that records a physical amount below zero (a negative GPU memory, bandwidth or count)."""


def is_amount(name: str) -> bool:
    """Whether the field ``name`` holds a physical amount (never negative)."""
    got = _AMOUNT.get(name)
    if got is None:
        got = _AMOUNT[name] = name in _AMOUNTS or name.endswith(_AMOUNT_SUFFIXES) or name.startswith(_AMOUNT_PREFIXES)
    return got


def negative(name: str, value: Any, where: str) -> Unphysical | None:
    """The error of a negative physical amount (None: ``value`` is not one)."""
    if (type(value) is int or type(value) is float) and value < 0 and is_amount(name):
        return Unphysical(f"{where}: {value} is negative; a {name} cannot be (a corrupt or hand-edited scan)")
    return None


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _typename(tp: Any) -> str:
    if tp is type(None):
        return "null"
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_typename(a) for a in typing.get_args(tp))
    if origin is list:
        return "list"
    if origin is dict:
        return "object"
    if dataclasses.is_dataclass(tp):
        return "object"
    return {int: "integer", float: "number", str: "string", bool: "boolean"}.get(tp, getattr(tp, "__name__", str(tp)))


def _convert(value: Any, tp: Any, where: str) -> Any:
    if tp is Any:
        return value
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None:
            if type(None) in args:
                return None
            raise FactsError(f"{where}: expected {_typename(tp)}, got null")
        errors = []
        for a in args:
            if a is type(None):
                continue
            try:
                return _convert(value, a, where)
            except FactsError as e:
                errors.append(e)
        raise (
            errors[0] if len(errors) == 1 else FactsError(f"{where}: expected {_typename(tp)}, got {_describe(value)}")
        )
    if origin is list:
        (item,) = typing.get_args(tp)
        if not isinstance(value, list):
            raise FactsError(f"{where}: expected a list, got {_describe(value)}")
        return [_convert(v, item, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        _, vt = typing.get_args(tp)
        if not isinstance(value, dict):
            raise FactsError(f"{where}: expected an object, got {_describe(value)}")
        return {str(k): _convert(v, vt, f"{where}.{k}") for k, v in value.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _from_dict(tp, value, where)
    if tp is bool:
        if isinstance(value, bool):
            return value
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif tp is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return value  # an int stays an int, so a saved scan round-trips byte for byte
    elif tp is str:
        if isinstance(value, str):
            return value
    else:  # pragma: no cover - a type this model does not use
        return value
    raise FactsError(f"{where}: expected {_typename(tp)}, got {_describe(value)}")


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _from_dict(cls: type, data: Any, where: str) -> Any:
    hook = getattr(cls, "from_json_dict", None)
    if hook is not None:  # a dataclass that reads its own JSON form (serial.JsonHook); its errors are one line
        try:
            return hook(data, where)
        except FactsError:
            raise
        except ValueError as e:
            raise FactsError(str(e)) from None
    if not isinstance(data, dict):
        raise FactsError(f"{where or 'top level'}: expected an object, got {_describe(data)}")
    hints = _hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise FactsError(
            f"{(where + '.') if where else ''}{unknown[0]}: unknown field (not in schema version {SCHEMA_VERSION})"
        )
    kwargs = {}
    for name in names:
        if name in data:
            path = f"{where}.{name}" if where else name
            kwargs[name] = v = _convert(data[name], hints[name], path)
            bad = negative(name, v, path)
            if bad is not None:
                raise bad
    obj = cls(**kwargs)
    if isinstance(obj, Unavailable):
        # A fact this file does not carry (saved before the field existed) is null with that reason, like any
        # other missing fact, never a silent None.
        for f in dataclasses.fields(cls):
            if f.name not in data and f.name != "unavailable" and f.default is None and f.name not in obj.unavailable:
                obj.unavailable[f.name] = NOT_RECORDED
    return obj


def from_section(cls: type, data: Any, where: str) -> Any:
    """One section of a scan (``where``: its path, "storage.paths[0]") read as the full loader reads it."""
    return _from_dict(cls, data, where)


def from_dict(data: Any, origin: str = "scan") -> Rig:
    """Build a Rig from parsed JSON, checking kind and schema_version first."""
    if not isinstance(data, dict):
        raise FactsError(f"{origin}: not a gpuadvisor scan (top level is {_describe(data)}, expected an object)")
    if data.get("kind") != KIND:
        raise FactsError(
            f"{origin}: not a gpuadvisor scan (field 'kind' is {_describe(data.get('kind'))}, expected \"{KIND}\")"
        )
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise FactsError(
            f"{origin}: field 'schema_version' is {_describe(version)}; this gpuadvisor reads version {SCHEMA_VERSION} "
            "(re-run the scan with this version, or upgrade gpuadvisor)"
        )
    try:
        return _from_dict(Rig, data, "")
    except FactsError as e:
        raise type(e)(f"{origin}: field {e}") from None


def load(path: str | Path) -> Rig:
    """Read a saved scan; every failure is a FactsError with one readable line."""
    from gpuadvisor.inputs import SCAN_LIMIT, load_file, loads_json

    missing = "no such file (give the path of a scan saved with 'gpuadvisor scan --json FILE')"
    data = load_file(path, "a scan saved with --json", SCAN_LIMIT, loads_json, FactsError, missing)
    return from_dict(data, origin=str(Path(path)))
