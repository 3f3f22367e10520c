"""gpuadvisor rules / gpuadvisor explain: what the rules engine checks, and why."""

from __future__ import annotations

import json
from typing import Any

import click

from gpuadvisor import completion
from gpuadvisor.commands.options import policy_option, print_format_options
from gpuadvisor.errors import InputError


@click.command()
@print_format_options(
    "What to print: the table, or every rule as JSON (code, name, area, severity, description, thresholds)."
)
@click.option(
    "--area",
    metavar="AREA",
    help="Only rules of this area (gpu, pcie, nvlink, topology, host, software, health, bandwidth).",
)
@policy_option("Show the effect of a policy file: selected rules, severities and thresholds.")
def rules(fmt: str, as_json: bool, area: str | None, policy_path: str | None) -> None:
    """List every rule: code, name, area, default severity and what it checks.

    \b
    Codes: GA1xx PCIe, GA2xx topology and NVLink, GA3xx the GPUs, GA4xx the host,
    GA5xx software, GA6xx measured bandwidth. A policy file can select, ignore,
    re-grade rules and change thresholds (see examples/policies/).

    \b
    Examples:
      gpuadvisor rules
      gpuadvisor rules --area pcie
      gpuadvisor rules --policy node.toml      # check a policy file
      gpuadvisor explain GA101
    """
    from gpuadvisor.rules import AREAS, Policy, all_rules, load_policy
    from gpuadvisor.rules.thresholds import THRESHOLDS
    from gpuadvisor.rules.thresholds import fmt as fmt_value

    if area is not None and area not in AREAS:
        raise InputError(f"--area {area!r}: unknown area (one of {', '.join(AREAS)})")
    policy = load_policy(policy_path) if policy_path else Policy()
    selected = [r for r in all_rules() if area is None or r.area == area]
    if as_json or fmt == "json":
        out: list[dict[str, Any]] = []
        for r in selected:
            d: dict[str, Any] = r.to_dict()
            d["selected"] = policy.is_selected(r.code)
            d["effective_severity"] = policy.severity_for(r.code) or r.severity
            for t in d["thresholds"]:
                t["effective_value"] = policy.resolved_thresholds()[t["name"]]
            out.append(d)
        doc: dict[str, Any] = {"rules": out}
        if policy_path:
            doc["policy"] = {
                "file": policy_path,
                "fail_on": policy.fail_on,
                "thresholds": {n: policy.resolved_thresholds()[n] for n in THRESHOLDS},
            }
        click.echo(json.dumps(doc, indent=2))
        return
    from gpuadvisor.render.text.width import fit_lines, fit_table, term_width

    width = term_width()
    rows = []
    for r in selected:
        sev = policy.severity_for(r.code) or r.severity
        if not policy.is_selected(r.code):
            sev = "off"
        elif sev != r.severity:
            sev = f"{sev} (default {r.severity})"
        rows.append([r.code, r.name, r.area, sev, r.summary])
    click.echo(
        "\n".join(fit_table(rows, ["code", "name", "area", "severity", "checks"], width, indent="", tablefmt="plain"))
    )
    if policy_path and policy.thresholds:
        click.echo("")
        click.echo(f"thresholds set by {policy_path}:")
        for name, value in policy.thresholds.items():
            click.echo(
                "\n".join(
                    fit_lines(
                        [
                            f"  {name} = {fmt_value(value)} {THRESHOLDS[name].unit} "
                            f"(default {fmt_value(THRESHOLDS[name].value)})"
                        ],
                        width,
                    )
                )
            )
    click.echo("")
    click.echo(
        "\n".join(fit_lines(["gpuadvisor explain CODE: a rule's full description, thresholds and sources."], width))
    )


@click.command()
@click.argument("code", shell_complete=completion.rule_codes)
@print_format_options("What to print: the description, or the rule as JSON.")
def explain(code: str, fmt: str, as_json: bool) -> None:
    """Print a rule's full description: what it checks, why it matters, its threshold and source, the fix.

    CODE is a rule code (GA101) or name (pcie-link-downgraded); `gpuadvisor rules` lists them.
    """
    from gpuadvisor.render.text.width import term_width
    from gpuadvisor.rules import get_rule

    r = get_rule(code)
    if r is None:
        raise InputError(f"unknown rule {code!r} (list the rules with 'gpuadvisor rules')")
    if as_json or fmt == "json":
        click.echo(json.dumps(r.to_dict(), indent=2))
    else:
        click.echo("\n".join(explain_lines(r, term_width())))


def explain_lines(r: Any, width: int) -> list[str]:
    """A rule's description for the terminal: each section's prose joined into paragraphs and wrapped once at
    ``width`` (the rules' docstrings are wrapped at the source's width, which is not the reader's)."""
    from gpuadvisor.render.text.width import fit_line, fit_prose
    from gpuadvisor.rules.registry import SECTIONS
    from gpuadvisor.rules.thresholds import THRESHOLDS
    from gpuadvisor.rules.thresholds import fmt as fmt_value

    lines = [
        *fit_line(f"{r.code} {r.name}", width),
        *fit_line(f"area: {r.area}    default severity: {r.severity}", width),
        "",
        *fit_prose(r.summary, width),
    ]
    for title in SECTIONS:
        lines += ["", title, *fit_prose(r.sections[title], width, indent=4)]
    if r.thresholds:
        lines += ["", *fit_line("Thresholds in force (override in a policy file, [thresholds] table)", width)]
        for name in r.thresholds:
            t = THRESHOLDS[name]
            lines += fit_prose(f"{name} = {fmt_value(t.value)} {t.unit}: {t.description}", width, indent=4, hang=4)
            lines += fit_prose(f"source: {t.source}", width, indent=8)
    return lines
