"""A facts dataclass as JSON-ready data (``to_dict``), and the hook a dataclass may define to write and read its
own JSON form."""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol, Self, runtime_checkable


@runtime_checkable
class JsonHook(Protocol):
    """A dataclass in the facts model that defines both of these is written through ``to_json_dict`` (by
    ``to_dict``, so by ``Rig.to_json``) and read back through ``from_json_dict`` (by the scan loader), instead of
    field by field. ``where`` is the field's path in the scan ("advice"); a malformed value raises
    ``FactsError(f"{where}: ...")``, which the loader prefixes with the file's name."""

    def to_json_dict(self) -> dict[str, Any]: ...

    @classmethod
    def from_json_dict(cls, data: Any, where: str) -> Self: ...


_PLAIN = (str, int, float, bool, type(None))


def to_dict(obj: Any) -> Any:
    if type(obj) in _PLAIN:  # most values (a 256-GPU matrix is 65,536 strings): no dataclass check per cell
        return obj
    if isinstance(obj, list | tuple) and all(type(v) in _PLAIN for v in obj):
        return list(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        hook = getattr(obj, "to_json_dict", None)
        if hook is not None:  # a dataclass that writes its own JSON form (see JsonHook)
            return to_dict(hook())
        return {f.name: to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, list | tuple):
        return [to_dict(v) for v in obj]
    if isinstance(obj, dict):
        return {str(k): to_dict(v) for k, v in obj.items()}
    return obj
