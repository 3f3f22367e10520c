"""One ``to_dict`` for the dataclasses whose JSON form is their fields as they stand (plain values, lists and
dicts of them): the plan's costs, verdicts, calibration and storage stall, the power budget's circuit fit."""

from __future__ import annotations

from typing import Any


class FieldsDict:
    """A dataclass written as its fields, in their order: ``to_dict`` is ``{name: value}`` of every field."""

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))
