"""The machinery of the advice types: a ``Record`` is a dataclass that writes and reads its own JSON, and is a
read-only mapping over it."""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from gpuadvisor.errors import InputError


class AdviceFormatError(InputError):
    """Saved advice that does not have the advisor's shape; the message is one line naming the field (the scan
    loader prefixes the file)."""


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


_KEYS: dict[type, frozenset[str]] = {}


def _keys(cls: type) -> frozenset[str]:
    if cls not in _KEYS:
        _KEYS[cls] = frozenset(key for _, key, _ in _fields(cls))
    return _KEYS[cls]


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


Converter = Callable[[Any, str], Any]
_CONVERTERS: dict[Any, Converter] = {}


def converter(tp: Any) -> Converter:
    """The function that checks a parsed JSON value against ``tp`` (and builds records), made once per type."""
    conv = _CONVERTERS.get(tp)
    if conv is None:
        conv = _CONVERTERS[tp] = _make(tp)
    return conv


def _fail(tp: Any) -> Callable[[Any, str], typing.NoReturn]:
    name = _typename(tp)

    def fail(value: Any, where: str) -> typing.NoReturn:
        raise AdviceFormatError(f"{where}: expected {name}, got {describe(value)}")

    return fail


def _make(tp: Any) -> Converter:
    fail = _fail(tp)
    origin = typing.get_origin(tp)
    if tp is Any:
        return lambda value, where: value
    if origin in (typing.Union, types.UnionType):
        return _make_union(tp, fail)
    if origin is list:
        item = converter(typing.get_args(tp)[0])
        return lambda value, where: (
            [item(v, f"{where}[{i}]") for i, v in enumerate(value)] if type(value) is list else fail(value, where)
        )
    if origin is dict:
        vt = converter(typing.get_args(tp)[1])
        return lambda value, where: (
            {k: vt(v, f"{where}.{k}") for k, v in value.items()} if type(value) is dict else fail(value, where)
        )
    if isinstance(tp, type) and issubclass(tp, Record):
        return tp.from_json_dict
    # An int stays an int where a number is expected, so the advice is written back as it was read.
    kinds = {float: (int, float), int: (int,)}.get(tp, (tp,))
    return lambda value, where: value if type(value) in kinds else fail(value, where)


def _make_union(tp: Any, fail: Callable[[Any, str], typing.NoReturn]) -> Converter:
    args = typing.get_args(tp)
    optional = type(None) in args
    records = [a for a in args if isinstance(a, type) and issubclass(a, Record)]
    convs = [converter(a) for a in args if a is not type(None)]

    def union(value: Any, where: str) -> Any:
        if value is None and optional:
            return None
        if len(records) == 1 and type(value) is dict:
            return records[0].from_json_dict(value, where)
        for conv in convs:
            try:
                return conv(value, where)
            except AdviceFormatError:
                pass
        fail(value, where)

    return union


_PLAIN = (str, int, float, bool, type(None))


def _encode(value: Any) -> Any:
    if type(value) in _PLAIN:
        return value
    if isinstance(value, Record):
        return value.to_json_dict()
    if isinstance(value, list):
        return [v if type(v) in _PLAIN else _encode(v) for v in value]
    if isinstance(value, dict):
        return {k: v if type(v) in _PLAIN else _encode(v) for k, v in value.items()}
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
        digits, optional = self.ROUND, self.OPTIONAL
        for name, key, _ in _fields(type(self)):
            value = getattr(self, name)
            if value is None and key in optional:
                continue
            if digits is not None and type(value) is float:
                out[key] = round(value, digits)
            else:
                out[key] = value if type(value) in _PLAIN else _encode(value)
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
        known = 0
        for name, key, tp in _fields(cls):
            if key in data:
                kwargs[name] = converter(cls._field_type(name, tp, data))(data[key], f"{where}.{key}")
                known += 1
        extra = {} if known == len(data) else {k: v for k, v in data.items() if k not in _keys(cls)}
        return cls(**kwargs, saved=(tuple(data), extra))

    # -- the saved JSON's view (readers written against the file) --------------------------------------------
    def __getitem__(self, key: str) -> Any:
        return self.to_json_dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_json_dict())

    def __len__(self) -> int:
        return len(self.to_json_dict())

    def __bool__(self) -> bool:
        """``len(self) > 0`` (a Mapping is true when it has a key) without writing the JSON: ``band or None`` is
        asked of every candidate."""
        if type(self).to_json_dict is not Record.to_json_dict:
            return len(self) > 0
        if self.saved is not None:
            return bool(self.saved[0])
        optional = self.OPTIONAL
        return any(key not in optional or getattr(self, name) is not None for name, key, _ in _fields(type(self)))

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
