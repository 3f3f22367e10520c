"""The click options several commands share, one decorator each: the output files and formats (--format, --json,
--html, -o, -q), --redact, --policy, and the benchmark run (--backend, --nproc, --budget, --quick/--full).

Each fixes what must agree between commands (the flag, the parameter name, the type, the metavar); the help
says what the option does in that command, so it is given where it differs. The rig's source options are
``common.rig_source_options``, the workload ones ``gpuadvisor.advisor.options.workload_options``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from gpuadvisor.numbers import Count, Finite
from gpuadvisor.rules.gate import FAIL_ON_LEVELS  # the lowest severity that fails a gate (check, fleet)

F = TypeVar("F", bound=Callable[..., Any])

REDACT_HELP = (
    "Replace every identifier (hostnames, IPs, MACs, GPU UUIDs, serials, user names, "
    "input paths) with stable pseudonyms in "
)


def stacked(*decorators: Callable[[F], F]) -> Callable[[F], F]:
    """Several option decorators as one, in the order written (the order ``--help`` lists them)."""

    def apply(f: F) -> F:
        for d in reversed(decorators):
            f = d(f)
        return f

    return apply


def _shown(default: str | None) -> dict[str, Any]:
    """A default and ``[default: ...]`` in the help, or no default."""
    return {"default": default, "show_default": True} if default is not None else {"default": None}


def format_option(*choices: str, help: str | None = "What to print on stdout.", default: str | None = "text") -> Any:
    """--format (the parameter ``fmt``): what the command prints; its default is shown unless there is none."""
    return click.option("--format", "fmt", type=click.Choice(list(choices)), help=help, **_shown(default))


def print_format_options(help: str) -> Callable[[F], F]:
    """--format text|json for a command that saves no file, with the hidden --json (``as_json``) that means
    the same."""
    return stacked(
        format_option("text", "json", help=help),
        click.option(
            "--json",
            "as_json",
            is_flag=True,
            hidden=True,
            help="The same as --format json (this command saves no file).",
        ),
    )


def json_file_option(help: str) -> Any:
    """--json FILE (the parameter ``json_path``): save the command's JSON."""
    return click.option("--json", "json_path", metavar="FILE", help=help)


def html_file_option(help: str) -> Any:
    """--html FILE (the parameter ``html_path``): write the self-contained HTML."""
    return click.option("--html", "html_path", metavar="FILE", help=help)


def output_option(help: str, metavar: str = "PATH") -> Any:
    """-o/--output: write the report there instead of stdout."""
    return click.option("-o", "--output", metavar=metavar, help=help)


def quiet_option(help: str) -> Any:
    """-q/--quiet: nothing on stdout."""
    return click.option("-q", "--quiet", is_flag=True, help=help)


def redact_option(where: str) -> Any:
    """--redact: pseudonyms for every identifier ``where`` (the end of the help's sentence)."""
    return click.option("--redact", is_flag=True, help=REDACT_HELP + where)


def policy_option(help: str, *, metavar: str = "FILE.toml", dest: str = "policy_path") -> Any:
    """--policy: the rule policy file (select/ignore codes, severities, thresholds)."""
    return click.option("--policy", dest, metavar=metavar, help=help)


def fail_on_option(help: str, *, default: str | None = None) -> Any:
    """--fail-on info|warn|fail: the lowest severity that fails the gate (a given default is shown)."""
    return click.option("--fail-on", "fail_on", type=click.Choice(FAIL_ON_LEVELS), help=help, **_shown(default))


def backend_option(help: str) -> Any:
    """--backend nccl|gloo of the benchmarks' collectives."""
    return click.option("--backend", type=click.Choice(["nccl", "gloo"]), default=None, help=help)


def nproc_option(help: str) -> Any:
    """--nproc N: the benchmarks' processes for the collectives."""
    return click.option("--nproc", type=Count(1, 4096), default=None, metavar="N", help=help)


def budget_option(help: str) -> Any:
    """--budget SECONDS (the parameter ``budget_s``): the benchmarks' wall-clock budget."""
    return click.option(
        "--budget",
        "budget_s",
        type=Finite(0, 7 * 86400, min_open=True),
        default=None,
        metavar="SECONDS",
        help=help,
    )


def sweep_options(dest: str, quick_help: str, full_help: str) -> Callable[[F], F]:
    """--quick / --full: the benchmark preset, into the parameter ``dest`` (None: the default sweep)."""
    return stacked(
        click.option("--quick", dest, flag_value="quick", help=quick_help),
        click.option("--full", dest, flag_value="full", help=full_help),
    )
