"""Are the outputs of two versions of gpuadvisor the same, byte for byte?

A refactor must not change what a user sees. This script runs the same commands (scan, check, advise, report,
plan, import, fleet in every machine format, text and HTML) on the presets, the plan builds and the recorded real
fixtures, with the tree it is run from and with another revision of the project, and compares every output.

    python scripts/same_outputs.py                  # against the last commit (HEAD)
    python scripts/same_outputs.py --base c6b7f11   # against any revision
    python scripts/same_outputs.py record DIR       # only write this tree's outputs into DIR

The other revision is checked out with ``git worktree`` into a temporary folder and imported from there, laid out
as the wheel installs it (``probes/`` as ``gpuadvisor.probes``, ``reports/`` as ``gpuadvisor.reports``). The
inputs are this tree's fixtures for both, so only the code differs. What depends on the clock (the time a scan
was made) is masked before comparing. Exit 0: identical; 1: outputs differ (listed, with the first differing
line of each); 2: the script could not run.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRESETS = ["dgx-h100", "dgx-a100", "dgx2-v100", "h100-pcie", "4x4090-pcie", "2x3090-nvlink"]
SCANS = sorted(p.name for p in (ROOT / "tests/fixtures/h100-vm").glob("scan-*.json"))
MODELS = ["llama-3-8b", "llama-3-70b"]
# What depends on the clock or the temporary folder, masked in both outputs alike.
MASKS = [
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?"), "<TIME>"),
    (re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d(:\d\d)?( UTC)?"), "<TIME>"),
    (re.compile(r"/tmp/[\w./-]*same-outputs-[\w]+"), "<RUN>"),
    (re.compile(r"(timestamp_seconds |timestamp=\"|time=\")[\d.:T-]+"), r"\1<TIME>"),
    (re.compile(r"(scan_age_seconds\{[^}]*\} )\d+"), r"\1<AGE>"),  # seconds since the fixture was recorded
]
# ``scan --from`` reads this machine's data path again (free space, page cache, available RAM): figures that
# move between two runs. Their numbers are masked on the lines that carry them.
VOLATILE = re.compile(r"free_bytes|page_cache_bytes|memory_available|RAM available|MemAvailable|GiB free")


def cases(fx: str) -> list[tuple[str, list[str]]]:
    """(name, argv) of every command compared; ``fx`` is where the fixtures are, ``out/`` is for written files."""
    out: list[tuple[str, list[str]]] = []
    for p in PRESETS:
        out += [
            (f"scan-{p}.txt", ["scan", "--simulate", p]),
            (f"scan-{p}.json", ["scan", "--simulate", p, "--format", "json"]),
            (f"check-{p}.txt", ["check", "--simulate", p]),
            (f"check-{p}.json", ["check", "--simulate", p, "--format", "json"]),
            (f"check-{p}.junit", ["check", "--simulate", p, "--format", "junit"]),
            (f"check-{p}.prom", ["check", "--simulate", p, "--format", "prom"]),
            (f"report-{p}.html", ["report", "--simulate", p, "--html", "-"]),
        ]
        for m in MODELS:
            out += [
                (f"advise-{p}-{m}.txt", ["advise", "--simulate", p, "--model", m, "--explain"]),
                (f"advise-{p}-{m}.json", ["advise", "--simulate", p, "--model", m, "--format", "json"]),
                (f"advise-{p}-{m}-inference.txt", ["advise", "--simulate", p, "--model", m, "--task", "inference"]),
                (
                    f"advise-{p}-{m}-inference.json",
                    ["advise", "--simulate", p, "--model", m, "--task", "inference", "--format", "json"],
                ),
            ]
        out.append(
            (
                f"scan-{p}-advice.html",
                ["scan", "--simulate", p, "--model", "llama-3-70b", "--html", "-", "--format", "json"],
            )
        )
    for s in SCANS:
        f = f"{fx}/h100-vm/{s}"
        out += [
            (f"scan-from-{s}.txt", ["scan", "--from", f]),
            (f"scan-from-{s}.json", ["scan", "--from", f, "--format", "json"]),
            (f"check-from-{s}.json", ["check", "--from", f, "--format", "json"]),
            (f"advise-from-{s}.txt", ["advise", "--from", f, "--model", "llama-3-8b", "--explain"]),
            (f"report-from-{s}.html", ["report", f, "--html", "-"]),
        ]
    for task, model in [("lora", "llama-3-70b"), ("inference", "llama-3-8b"), ("train", "llama-3-8b")]:
        base = ["plan", "--model", model, "--task", task]
        out += [
            (f"plan-{task}-{model}.txt", base),
            (f"plan-{task}-{model}.json", [*base, "--format", "json"]),
            (f"plan-{task}-{model}.html", [*base, "--html", "-"]),
        ]
    for folder in ("import/samples", "import/round3", "import/found", "import/own", "beyond", "storage"):
        for p in sorted((ROOT / "tests/fixtures" / folder).glob("*")):
            if p.is_file() and p.suffix in (".txt", ".log", ".xml", ".json", ".out") and "SOURCES" not in p.name:
                f = f"{fx}/{folder}/{p.name}"
                out += [
                    (f"import-{folder.replace('/', '-')}-{p.name}.txt", ["import", f]),
                    (f"import-{folder.replace('/', '-')}-{p.name}.json", ["import", f, "--format", "json"]),
                ]
    return out


def fleet_cases() -> list[tuple[str, list[str]]]:
    return [
        ("fleet.txt", ["fleet", "fleetdir", "--all"]),
        ("fleet.json", ["fleet", "fleetdir", "--format", "json"]),
        ("fleet.prom", ["fleet", "fleetdir", "--format", "prom"]),
        ("fleet.junit", ["fleet", "fleetdir", "--format", "junit"]),
        ("fleet.html", ["fleet", "fleetdir", "--html", "out/fleet.html", "-q"]),
    ]


def help_cases() -> list[tuple[str, list[str], dict[str, str]]]:
    """Every command's ``--help`` at two terminal widths (shared option groups must not change a byte of it)."""
    from gpuadvisor.cli import COMMANDS

    return [
        (f"help-{cmd or 'gpuadvisor'}-{cols}.txt", [*([cmd] if cmd else []), "--help"], {"COLUMNS": str(cols)})
        for cmd in ["", *COMMANDS]
        for cols in (80, 120)
    ]


def _mask(text: str) -> str:
    for rx, repl in MASKS:
        text = rx.sub(repl, text)
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if VOLATILE.search(line):
            lines[i] = re.sub(r"\d+(\.\d+)?", "<N>", line)
    return "\n".join(lines)


def record(dest: Path) -> int:
    """Run every case in this process (whatever ``gpuadvisor`` imports as) and write its outputs into ``dest``."""
    from click.testing import CliRunner

    from gpuadvisor.cli import _run

    dest.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="same-outputs-"))
    try:
        os.chdir(work)
        (work / "fx").symlink_to(ROOT / "tests/fixtures")
        (work / "out").mkdir()
        env = {"COLUMNS": "100", "NO_COLOR": "1", "TZ": "UTC", "GPUADVISOR_HOSTNAME": ""}
        runner = CliRunner()

        def run(name: str, argv: list[str], extra: dict[str, str] | None = None) -> None:
            # As the console script runs it (gpuadvisor.cli): one-line errors on stderr, the exit status.
            with runner.isolation(env={**env, **(extra or {})}) as (out, err, _):
                rc = _run(list(argv))
                sys.stdout.flush()
                sys.stderr.flush()
                stdout, stderr = out.getvalue().decode(), err.getvalue().decode()
            text = f"$ gpuadvisor {' '.join(argv)}\nexit {rc}\n{stdout}" + (f"\nSTDERR:\n{stderr}" if stderr else "")
            (dest / name).write_text(_mask(text))

        for name, argv in cases("fx"):
            run(name, argv)
        for name, argv, extra in help_cases():
            run(name, argv, extra)
        # A fleet of the presets, one node each, plus one of the real scans.
        (work / "fleetdir").mkdir()
        for i, p in enumerate(PRESETS[:4]):
            for n in range(2):
                host = f"node{i}{n}"
                run(
                    f"fleet-input-{host}.txt",
                    ["scan", "--simulate", p, "--json", f"fleetdir/{host}.json", "--format", "json"],
                    {"GPUADVISOR_HOSTNAME": host},
                )
        shutil.copy(ROOT / "tests/fixtures/h100-vm/scan-bench.json", work / "fleetdir/h100vm.json")
        for name, argv in fleet_cases():
            run(name, argv)
        for f in sorted((work / "out").iterdir()):
            (dest / f"file-{f.name}").write_text(_mask(f.read_text()))
    finally:
        os.chdir(ROOT)
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _layout(tree: Path, into: Path) -> Path:
    """A folder from which ``import gpuadvisor`` gives ``tree``'s code laid out as the wheel installs it."""
    pkg = into / "gpuadvisor"
    pkg.mkdir(parents=True)
    for entry in (tree / "gpuadvisor").iterdir():
        (pkg / entry.name).symlink_to(entry)
    for top in ("probes", "reports"):
        if not (pkg / top).exists():
            (pkg / top).symlink_to(tree / top)
    return into


def record_revision(rev: str, dest: Path) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="same-outputs-base-"))
    tree = tmp / "tree"
    try:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(tree), rev], check=True)
        path = _layout(tree, tmp / "path")
        env = {**os.environ, "PYTHONPATH": str(path), "PYTHONDONTWRITEBYTECODE": "1"}
        code = (
            "import sys, gpuadvisor; "
            f"assert gpuadvisor.__file__.startswith({str(path)!r}), gpuadvisor.__file__; "
            f"sys.path.insert(0, {str(ROOT / 'scripts')!r}); import same_outputs; "
            f"sys.exit(same_outputs.record(__import__('pathlib').Path({str(dest)!r})))"
        )
        subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd=tmp)
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
        shutil.rmtree(tmp, ignore_errors=True)


def compare(a: Path, b: Path) -> int:
    names = sorted({p.name for p in a.iterdir()} | {p.name for p in b.iterdir()})
    bad = 0
    for n in names:
        fa, fb = a / n, b / n
        if not fa.exists() or not fb.exists():
            print(f"{n}: only in {'the base' if fa.exists() else 'this tree'}")
            bad += 1
            continue
        ta, tb = fa.read_text(), fb.read_text()
        if ta != tb:
            bad += 1
            diff = list(difflib.unified_diff(ta.splitlines(), tb.splitlines(), "base", "this tree", n=0, lineterm=""))
            print(f"{n}: differs")
            for line in diff[2:8]:
                print("    " + line[:160])
    digest = hashlib.sha256(b"".join((b / n).read_bytes() for n in names if (b / n).exists())).hexdigest()[:16]
    print(f"{len(names)} outputs compared, {bad} differ (this tree's outputs: sha256 {digest})")
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", nargs="?", choices=["compare", "record"], default="compare")
    ap.add_argument("dir", nargs="?", help="record: where to write the outputs")
    ap.add_argument("--base", default="HEAD", help="the revision to compare with (default HEAD)")
    ap.add_argument("--keep", help="compare: keep both sets of outputs in this folder")
    args = ap.parse_args()
    if args.mode == "record":
        if not args.dir:
            ap.error("record needs a folder")
        return record(Path(args.dir).resolve())
    keep = Path(args.keep).resolve() if args.keep else Path(tempfile.mkdtemp(prefix="same-outputs-cmp-"))
    for sub in ("base", "tree"):
        shutil.rmtree(keep / sub, ignore_errors=True)
    record_revision(args.base, keep / "base")
    subprocess.run([sys.executable, str(Path(__file__).resolve()), "record", str(keep / "tree")], check=True)
    rc = compare(keep / "base", keep / "tree")
    if not args.keep:
        shutil.rmtree(keep, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
