"""The strategy section for an advice dict the advisor did not write: candidates table, pick, reason, launch
snippets and the rest as it is (the advisor's own advice is gpuadvisor.render.html.advice)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from gpuadvisor.render.html.view import fmt_any

_PICK_KEYS = ("pick", "recommended", "recommendation", "choice", "best")
_CANDIDATE_KEYS = ("candidates", "strategies", "table", "options")
_REASON_KEYS = ("reason", "why", "rationale")


def _is_snippet_key(k: str) -> bool:
    k = k.lower()
    return any(
        w in k for w in ("snippet", "launch", "command", "torchrun", "deepspeed", "accelerate", "config_text", "script")
    )


NAME_KEYS = ("name", "strategy", "label", "id")


def _pop_first(d: dict[str, Any], keys: tuple[str, ...], ok: Callable[[dict[str, Any], str], bool]) -> Any:
    """The value of the first of ``keys`` that ``ok`` accepts, taken out of ``d``; None when there is none."""
    for k in keys:
        if ok(d, k):
            return d.pop(k)
    return None


def _is_candidates(d: dict[str, Any], k: str) -> bool:
    return isinstance(d.get(k), list) and all(isinstance(c, dict) for c in d[k])


def _is_text(d: dict[str, Any], k: str) -> bool:
    return isinstance(d.get(k), str)


def _take_snippets(d: dict[str, Any], snippets: list[tuple[str, str]], prefix: str = "") -> None:
    """Move the launch snippets out of ``d`` into ``snippets`` (text as is, a mapping of texts one by one, other
    structures as JSON)."""
    for k in list(d):
        v = d[k]
        if _is_snippet_key(k) and isinstance(v, str):
            snippets.append((prefix + k, v))
            del d[k]
        elif _is_snippet_key(k) and isinstance(v, dict) and all(isinstance(x, str) for x in v.values()):
            for kk, vv in v.items():
                snippets.append((f"{prefix}{k}: {kk}", vv))
            del d[k]
        elif _is_snippet_key(k) and isinstance(v, dict | list):
            snippets.append((prefix + k, json.dumps(v, indent=2)))
            del d[k]


def _pick_view(
    pick: Any, reason: str | None, snippets: list[tuple[str, str]]
) -> tuple[str | None, list[tuple[str, str]], str | None]:
    """(the pick's name, its other fields, the reason) from the advice's pick, a mapping or a bare value."""
    if isinstance(pick, dict):
        pick = dict(pick)
        _take_snippets(pick, snippets)
        if reason is None:
            reason = _pop_first(pick, _REASON_KEYS, _is_text)
        name = next((str(pick[k]) for k in NAME_KEYS if k in pick), None)
        fields = [(k, fmt_any(v)) for k, v in pick.items() if not (k in NAME_KEYS and str(v) == name)]
        return name, fields, reason
    return (fmt_any(pick) if pick is not None else None), [], reason


def _candidates_table(candidates: list[dict[str, Any]], pick_name: str | None) -> dict[str, Any]:
    cols: list[str] = []
    for c in candidates:
        for k in c:
            if k not in cols:
                cols.append(k)
    name_key = next((k for k in NAME_KEYS if k in cols), None)
    rows = []
    for c in candidates:
        is_pick = name_key is not None and pick_name is not None and str(c.get(name_key)) == pick_name
        rows.append({"cells": [fmt_any(c.get(k)) for k in cols], "pick": is_pick, "css": _candidate_css(c)})
    return {"columns": [k.replace("_", " ") for k in cols], "rows": rows}


def advice_view(advice: Any) -> dict[str, Any] | None:
    """Render the advisor's dict generically: candidates table, pick, reason, launch snippets, the rest as is."""
    if not advice:
        return None
    rest = dict(advice)
    candidates = _pop_first(rest, _CANDIDATE_KEYS, _is_candidates)
    pick = _pop_first(rest, _PICK_KEYS, lambda d, k: k in d)
    reason = _pop_first(rest, _REASON_KEYS, _is_text)
    snippets: list[tuple[str, str]] = []
    pick_name, pick_fields, reason = _pick_view(pick, reason, snippets)
    _take_snippets(rest, snippets)
    return {
        "advisor": False,
        "pick_name": pick_name,
        "pick_fields": pick_fields,
        "reason": reason,
        "snippets": snippets,
        "table": _candidates_table(candidates, pick_name) if candidates else None,
        "rest": [(k.replace("_", " "), fmt_any(v), _nested(v)) for k, v in rest.items()],
    }


def _nested(v: Any) -> bool:
    """A value fmt_any prints as JSON (shown in a monospace cell)."""
    if isinstance(v, dict):
        return any(isinstance(x, dict | list) for x in v.values())
    return isinstance(v, list) and any(isinstance(x, dict | list) for x in v)


def _candidate_css(c: dict[str, Any]) -> str:
    fits = c.get("fits")
    if fits is False:
        return "nofit"
    return ""
