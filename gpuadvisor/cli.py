"""The command line: thin. Parse, call, render, exit code.

Exit codes (one table for every command): 0 ok; 1 a check failed (``check``, ``--fail-on``); 2 bad input or
the tool could not run. Machine output goes to stdout, progress and logs to stderr.

Commands are imported only when run (``COMMANDS`` maps a name to ``module:function`` and its one-line help),
so ``gpuadvisor --help`` starts without importing torch, jinja2 or pynvml.
"""

from __future__ import annotations

import sys
import traceback

import click

from gpuadvisor import __version__
from gpuadvisor.errors import InputError

# name -> (module:attribute, short help). Each command module owns its options.
COMMANDS: dict[str, tuple[str, str]] = {
    "scan": (
        "gpuadvisor.commands.scan:scan",
        "Probe this machine (or a preset, or a saved scan) and report what it is.",
    ),
    "presets": ("gpuadvisor.commands.presets:presets", "List the simulated rigs built in."),
    "bench": ("gpuadvisor.commands.bench:bench", "Measure collectives, peer-to-peer and host<->device bandwidth."),
    "rules": ("gpuadvisor.commands.rules:rules", "List every rule: code, name, area, severity."),
    "explain": ("gpuadvisor.commands.rules:explain", "Print a rule's full description."),
    "advise": ("gpuadvisor.commands.advise:advise", "Recommend a parallelism strategy for a model on this rig."),
    "report": ("gpuadvisor.commands.report:report", "Render a saved scan as HTML (or text, JSON)."),
    "import": ("gpuadvisor.commands.importing:import_", "Turn nvidia-smi / lspci / nccl-tests output into a scan."),
    "plan": (
        "gpuadvisor.commands.plan:plan",
        "Compare candidate builds for a workload before buying or renting: speed, time, cost, power.",
    ),
    "check": (
        "gpuadvisor.commands.check:check",
        "Gate a node: findings against a policy, exit 1 on failure; text, JSON, JUnit, Prometheus.",
    ),
    "fleet": (
        "gpuadvisor.commands.fleet:fleet",
        "Compare many nodes' scans: outliers, drift, failed and missing nodes, stragglers.",
    ),
}


def did_you_mean(name: str, choices: list[str]) -> str:
    """'; did you mean scan?' for a mistyped command (empty when none is close)."""
    import difflib

    close = difflib.get_close_matches(name.lower(), choices, n=2, cutoff=0.6)
    return f"; did you mean {' or '.join(close)}?" if close else ""


def _command_path(args: list[str]) -> str:
    """'gpuadvisor scan' for the command the arguments name (the first word that is one), else 'gpuadvisor'."""
    name = next((a for a in args if not a.startswith("-")), "")
    return f"gpuadvisor {name}" if name in COMMANDS else "gpuadvisor"


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return [n for n in COMMANDS if self._available(n)]

    @staticmethod
    def _available(name: str) -> bool:
        import importlib.util

        module = COMMANDS[name][0].split(":")[0]
        try:
            return importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            return False

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS or not self._available(name):
            return None
        import importlib

        module, attr = COMMANDS[name][0].split(":")
        return getattr(importlib.import_module(module), attr)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            ctx.fail(f"No such command {name!r}{did_you_mean(name, self.list_commands(ctx))}")
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(n, COMMANDS[n][1]) for n in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="gpuadvisor")
@click.option("-v", "--verbose", is_flag=True, help="Show tracebacks and debug detail on errors.")
@click.pass_context
def cli(ctx: click.Context, verbose: bool) -> None:
    """gpuadvisor: what a multi-GPU machine really is, what it really does, what is wrong with it,
    and how to train on it.

    \b
    Try it without a GPU:
      gpuadvisor presets
      gpuadvisor scan --simulate dgx-h100
    """
    ctx.ensure_object(dict)
    ctx.obj["verbose"] = verbose


def main(argv: list[str] | None = None) -> None:
    """Run one command and exit with its status (see the module's table).

    stdout and stderr are guarded for the whole run (gpuadvisor.streams): control characters from the data
    are printed visibly, never obeyed; a reader that goes away (``| head``) does not change the exit status;
    a stdout that cannot be written (a full disk) is one line and exit 2.
    """
    from gpuadvisor.errors import OutputError
    from gpuadvisor.streams import guard_streams

    try:
        with guard_streams():
            rc = _run(argv)
    except OutputError as e:  # the last flush of stdout failed: a full disk, a device that refuses
        try:
            sys.stderr.write(f"gpuadvisor: error: {e}\n")
            sys.stderr.flush()
        except OSError:
            pass
        rc = 2
    sys.exit(rc)


def _interrupted(signum: int) -> int:
    click.echo(f"gpuadvisor: interrupted ({'SIGTERM' if signum == 15 else 'Ctrl-C'})", err=True)
    return 128 + signum


def _run(argv: list[str] | None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    verbose = "-v" in args or "--verbose" in args
    try:
        rc = cli.main(args=argv, prog_name="gpuadvisor", standalone_mode=False)
    except click.exceptions.Exit as e:
        return e.exit_code
    except click.exceptions.Abort as e:
        # click turns a KeyboardInterrupt (Ctrl-C, or the benchmarker's SIGTERM handler) into Abort.
        return _interrupted(getattr(e.__context__, "signum", 2))
    except click.exceptions.NoArgsIsHelpError as e:  # `gpuadvisor` alone: the usage, as --help prints it
        click.echo(e.ctx.get_help() if e.ctx is not None else cli.get_help(click.Context(cli)))
        return 0
    except click.UsageError as e:
        # One line, like every other bad input: what was wrong, and where to look (an option's missing value is
        # raised without its command's context: the command is the one the arguments name).
        where = e.ctx.command_path if e.ctx is not None else _command_path(args)
        click.echo(f"gpuadvisor: error: {e.format_message()} (see '{where} --help')", err=True)
        return 2
    except click.ClickException as e:
        e.show()
        return 2 if e.exit_code in (1, 2) else e.exit_code
    except InputError as e:
        if getattr(sys.stdout, "error", None) is e:
            sys.stdout.reported = True  # type: ignore[union-attr]
        if verbose:
            traceback.print_exc()
        click.echo(f"gpuadvisor: error: {e}", err=True)
        return e.exit_code
    except KeyboardInterrupt as e:
        return _interrupted(getattr(e, "signum", 2))
    except RecursionError:  # data nested deeper than any check foresaw: still one line
        if verbose:
            traceback.print_exc()
        click.echo(
            "gpuadvisor: error: the input is nested too deeply to process (run with -v for the traceback)", err=True
        )
        return 2
    except Exception as e:  # a bug: one line unless -v
        if verbose:
            traceback.print_exc()
        click.echo(f"gpuadvisor: internal error: {e.__class__.__name__}: {e} (run with -v for the traceback)", err=True)
        return 2
    return rc if isinstance(rc, int) else 0
