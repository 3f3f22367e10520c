"""The machinery of the advice types: a ``Record`` is a dataclass that writes and reads its own JSON, and is a
read-only mapping over it."""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar


class AdviceFormatError(ValueError):
    """Saved advice that does not have the advisor's shape; the message is one line naming the field."""


def describe(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return "null" if value is None else f"boolean {str(value).lower()}"
    if isinstance(value, dict | list):
        return "an object" if isinstance(value, dict) else "a list"
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _json_key(f: dataclasses.Field[Any]) -> str:
    return str(f.metadata.get("json", f.name))


_FIELDS: dict[type, list[tuple[str, str, Any]]] = {}


def _fields(cls: type) -> list[tuple[str, str, Any]]:
    """(attribute, JSON key, type) of a record's fields, in JSON order."""
    if cls not in _FIELDS:
        hints = typing.get_type_hints(cls)
        _FIELDS[cls] = [(f.name, _json_key(f), hints[f.name]) for f in dataclasses.fields(cls) if f.name != "saved"]
    return _FIELDS[cls]


_NAMES = {int: "integer", float: "number", str: "string", bool: "boolean", type(None): "null"}


def _typename(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(dict.fromkeys(_typename(a) for a in typing.get_args(tp)))
    if origin is list:
        return "list"
    if origin is dict or (isinstance(tp, type) and issubclass(tp, Record)):
        return "object"
    return _NAMES.get(tp, getattr(tp, "__name__", str(tp)))


def _convert(value: Any, tp: Any, where: str) -> Any:
    """``value`` (parsed JSON) checked against ``tp``; records are built, everything else is kept as it is."""
    if tp is Any:
        return value
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        records = [a for a in args if isinstance(a, type) and issubclass(a, Record)]
        if isinstance(value, dict) and len(records) == 1:
            return records[0].from_json_dict(value, where)
        for a in args:
            if a is not type(None):
                try:
                    return _convert(value, a, where)
                except AdviceFormatError:
                    pass
    elif origin is list:
        if isinstance(value, list):
            (item,) = typing.get_args(tp)
            return [_convert(v, item, f"{where}[{i}]") for i, v in enumerate(value)]
    elif origin is dict:
        if isinstance(value, dict):
            vt = typing.get_args(tp)[1]
            return {k: _convert(v, vt, f"{where}.{k}") for k, v in value.items()}
    elif isinstance(tp, type) and issubclass(tp, Record):
        return tp.from_json_dict(value, where)
    elif tp is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return value  # an int stays an int, so the advice is written back as it was read
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif isinstance(value, tp):
        return value
    raise AdviceFormatError(f"{where}: expected {_typename(tp)}, got {describe(value)}")


def _encode(value: Any, digits: int | None) -> Any:
    if isinstance(value, Record):
        return value.to_json_dict()
    if isinstance(value, list):
        return [_encode(v, None) for v in value]
    if isinstance(value, dict):
        return {k: _encode(v, None) for k, v in value.items()}
    if digits is not None and isinstance(value, float):
        return round(value, digits)
    return value


@dataclass(eq=False)
class Record(Mapping[str, Any]):
    """A part of the advice: attributes for code, ``to_json_dict``/``from_json_dict`` for the saved scan."""

    OPTIONAL: ClassVar[frozenset[str]] = frozenset()  # JSON keys left out while their value is None
    ROUND: ClassVar[int | None] = None  # float fields written rounded to this many decimals
    # Read from a file: (the keys in their saved order, the saved keys this version has no field for).
    saved: tuple[tuple[str, ...], dict[str, Any]] | None = field(default=None, repr=False, kw_only=True)

    def to_json_dict(self) -> dict[str, Any]:
        out = {}
        for name, key, _ in _fields(type(self)):
            value = getattr(self, name)
            if value is not None or key not in self.OPTIONAL:
                out[key] = _encode(value, self.ROUND)
        if self.saved is None:
            return out
        keys, extra = self.saved
        return {k: extra[k] if k in extra else out.get(k) for k in keys}

    to_dict = to_json_dict

    @classmethod
    def _field_type(cls, name: str, tp: Any, data: dict[str, Any]) -> Any:
        """The type a field is read as (a record whose fields depend on another field overrides this)."""
        return tp

    @classmethod
    def from_json_dict(cls, data: Any, where: str = "advice") -> Any:
        if not isinstance(data, dict):
            raise AdviceFormatError(f"{where}: expected an object, got {describe(data)}")
        kwargs: dict[str, Any] = {}
        for name, key, tp in _fields(cls):
            if key in data:
                kwargs[name] = _convert(data[key], cls._field_type(name, tp, data), f"{where}.{key}")
        known = {key for _, key, _ in _fields(cls)}
        return cls(**kwargs, saved=(tuple(data), {k: v for k, v in data.items() if k not in known}))

    # -- the saved JSON's view (readers written against the file) --------------------------------------------
    def __getitem__(self, key: str) -> Any:
        return self.to_json_dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_json_dict())

    def __len__(self) -> int:
        return len(self.to_json_dict())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Record):
            return self.to_json_dict() == other.to_json_dict()
        if isinstance(other, Mapping):
            return self.to_json_dict() == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


def named(name: str) -> Any:
    """A field whose JSON key is ``name`` (default None)."""
    return field(default=None, metadata={"json": name})
