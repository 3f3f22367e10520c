"""The self-contained HTML report: one file, inline CSS and SVG, nothing fetched, the scan JSON embedded.

``render_html(rig)`` builds a view of the Rig (every figure with its provenance) and renders the jinja2
templates shipped in ``gpuadvisor.reports`` (``reports/templates/``) with autoescape on. The page reads only
what the Rig holds — the same facts as ``rig.to_json()``, which is embedded as
``<script type="application/json" id="scan">`` — plus what follows from them by gpuadvisor's own tables
(expected link bandwidth, ``gpuadvisor.physics.links``) and the rule descriptions of the registry.

The view is built by section: ``report`` (the whole page) from ``hardware`` (banner, host, software, GPUs),
``topology`` (matrices; the diagram's geometry in ``topology_layout``), ``network``, ``bandwidth`` (charts in
``svg_charts``), ``storage``, ``findings`` (verdict and findings), ``advice``/``strategy`` and ``view`` (the shared
value type and formatters). ``environment()`` is the one jinja2 environment, also used by the plan and fleet pages.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from gpuadvisor import facts
from gpuadvisor.facts import Rig


def _bytecode_cache(jinja2: Any) -> Any:
    """Compiled templates kept between runs, so a `report --html` process does not recompile them (~170 ms):
    jinja2's FileSystemBytecodeCache in its per-user directory under the temp dir (created 0700, refused if
    another user owns it), keyed by each template's source checksum. GPUADVISOR_NO_TEMPLATE_CACHE=1 turns it off."""
    import os

    if os.environ.get("GPUADVISOR_NO_TEMPLATE_CACHE"):
        return None
    try:
        return jinja2.FileSystemBytecodeCache()
    except (OSError, RuntimeError):  # no usable temp dir, or the cache dir is not ours: compile as before
        return None


@functools.cache
def environment() -> Any:
    """One jinja2 environment per process: templates compile once."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("gpuadvisor.reports", "templates"),
        bytecode_cache=_bytecode_cache(jinja2),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    from gpuadvisor.render.html.view import fmt_any

    env.filters["fmt"] = fmt_any
    env.filters["num"] = lambda v, nd=1: f"{v:.{nd}f}"
    return env


def render_html(rig: Rig) -> str:
    """The report as one self-contained HTML document (inline CSS and SVG, nothing fetched)."""
    import markupsafe

    from gpuadvisor.render.html.report import build_view

    view = build_view(rig)
    template = environment().get_template("report.html.j2")
    return template.render(
        v=view, rig=rig, scan_json=markupsafe.Markup(view.scan_json), schema_version=facts.SCHEMA_VERSION
    )


def write_html(rig: Rig, path: str | Path) -> Path:
    """Render and write the report (UTF-8); returns the path written."""
    from gpuadvisor.output import write_atomic

    return write_atomic(Path(path), render_html(rig), what="report")
