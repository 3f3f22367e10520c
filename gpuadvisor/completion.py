"""Shell completion of the names a user types: preset names, model names, rule codes, scan files.

click completes commands and options itself (``eval "$(_GPUADVISOR_COMPLETE=bash_source gpuadvisor)"``; zsh_source
and fish_source for the other shells); these give it the values. Each reads the packaged lists only when a
completion is asked for, never at start-up."""

from __future__ import annotations

from typing import Any

import click
from click.shell_completion import CompletionItem


def _items(names: list[str], incomplete: str) -> list[CompletionItem]:
    return [CompletionItem(n) for n in names if n.startswith(incomplete)]


def presets(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """--simulate: a preset name, else a rig description file (the shell's own file completion)."""
    from gpuadvisor.probes.rigdesc import preset_names

    names = _items(preset_names(), incomplete)
    return names or [CompletionItem(incomplete, type="file")]


def models(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """--model: a model of the catalog, else a config.json path."""
    from gpuadvisor.catalog import model_names

    names = _items(model_names(), incomplete)
    return names or [CompletionItem(incomplete, type="file")]


def rule_codes(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """explain CODE: a rule code or name."""
    from gpuadvisor.rules import all_rules

    rules = all_rules()
    return _items(
        [r.code for r in rules] + [r.name for r in rules],
        incomplete.upper() if incomplete[:2].lower() == "ga" else incomplete,
    )
