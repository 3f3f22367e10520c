"""The strategy section for an advice dict the advisor did not write: candidates table, pick, reason, launch
snippets and the rest as it is (the advisor's own advice is gpuadvisor.render.html.advice)."""

from __future__ import annotations

import json
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


def advice_view(advice: Any) -> dict[str, Any] | None:
    """Render the advisor's dict generically: candidates table, pick, reason, launch snippets, the rest as is."""
    if not advice:
        return None
    rest = dict(advice)
    candidates = None
    for k in _CANDIDATE_KEYS:
        if isinstance(rest.get(k), list) and all(isinstance(c, dict) for c in rest[k]):
            candidates = rest.pop(k)
            break
    pick = None
    for k in _PICK_KEYS:
        if k in rest:
            pick = rest.pop(k)
            break
    reason = None
    for k in _REASON_KEYS:
        if isinstance(rest.get(k), str):
            reason = rest.pop(k)
            break
    snippets: list[tuple[str, str]] = []

    def take_snippets(d: dict[str, Any], prefix: str = "") -> None:
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

    pick_fields: list[tuple[str, str]] = []
    pick_name = None
    if isinstance(pick, dict):
        pick = dict(pick)
        take_snippets(pick)
        for k in _REASON_KEYS:
            if reason is None and isinstance(pick.get(k), str):
                reason = pick.pop(k)
        pick_name = next((str(pick[k]) for k in ("name", "strategy", "label", "id") if k in pick), None)
        pick_fields = [
            (k, fmt_any(v))
            for k, v in pick.items()
            if not (k in ("name", "strategy", "label", "id") and str(v) == pick_name)
        ]
    elif pick is not None:
        pick_name = fmt_any(pick)
    take_snippets(rest)
    table = None
    if candidates:
        cols: list[str] = []
        for c in candidates:
            for k in c:
                if k not in cols:
                    cols.append(k)
        name_key = next((k for k in ("name", "strategy", "label", "id") if k in cols), None)
        rows = []
        for c in candidates:
            is_pick = name_key is not None and pick_name is not None and str(c.get(name_key)) == pick_name
            rows.append({"cells": [fmt_any(c.get(k)) for k in cols], "pick": is_pick, "css": _candidate_css(c)})
        table = {"columns": [k.replace("_", " ") for k in cols], "rows": rows}
    return {
        "advisor": False,
        "pick_name": pick_name,
        "pick_fields": pick_fields,
        "reason": reason,
        "snippets": snippets,
        "table": table,
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
