"""``gpuadvisor check`` as text: what was checked, the findings, the gate line (the gate: gpuadvisor.rules.gate)."""

from __future__ import annotations

from gpuadvisor.rules.gate import CheckResult, gating_severities


def render_text(res: CheckResult, *, color: bool = False, width: int | None = None) -> str:
    """The gate's text: what was checked, the findings, the gate line; every line fits ``width`` (default: the
    terminal's) and carries no control character from the data (also when written to a file with -o)."""
    from gpuadvisor.render.text.findings import render_findings
    from gpuadvisor.render.text.width import fit_lines, term_width
    from gpuadvisor.text import plural

    width = width or term_width()
    rig = res.rig
    src = rig.source.kind + (f" preset {rig.source.preset}" if rig.source.preset else "")
    head = (
        f"gpuadvisor check: {rig.host.hostname or 'host'} ({src}), {plural(len(rig.gpus), 'GPU')}, "
        f"{plural(len(res.rules), 'rule')}, policy {res.policy or 'default'}"
    )
    levels = ", ".join(gating_severities(res.fail_on))
    policy = f"fail-on {res.fail_on}" + (f": fails on {levels}" if levels != res.fail_on else "")
    if res.exit_code == 2:
        gate = "Gate: not judged (no GPU found, nothing failing); exit 2"
    elif res.failing:
        codes = ", ".join(dict.fromkeys(f.code for f in res.failing))
        gate = f"Gate: FAIL ({policy}): {codes}; exit 1"
    else:
        gate = f"Gate: pass ({policy}); exit 0"
    if color:
        gate = f"\033[{'1;31' if res.exit_code else '1;32'}m{gate}\033[0m"
    body = render_findings(res.findings, color=color, width=width, rig=rig if not rig.gpus else None)
    return "\n".join(fit_lines([head, "", *body.rstrip("\n").split("\n"), gate], width)) + "\n"
