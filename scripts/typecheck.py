"""mypy over the package as it installs: gpuadvisor with probes/ as gpuadvisor.probes and reports/ as
gpuadvisor.reports (pyproject.toml's package-dir). mypy cannot map a folder to another package name, so this
lays the package out in a temporary folder of symbolic links and checks that; errors name the checkout's paths."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAPPED = {"probes": ROOT / "probes", "reports": ROOT / "reports"}


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="gpuadvisor-mypy-") as tmp:
        pkg = Path(tmp) / "gpuadvisor"
        pkg.mkdir()
        for child in (ROOT / "gpuadvisor").iterdir():
            if child.name != "__pycache__":
                (pkg / child.name).symlink_to(child)
        for name, src in MAPPED.items():
            (pkg / name).symlink_to(src)
        r = subprocess.run(
            [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), "-p", "gpuadvisor"],
            cwd=tmp,
            capture_output=True,
            text=True,
        )
        out = r.stdout.replace("gpuadvisor/probes/", "probes/").replace("gpuadvisor/reports/", "reports/")
        sys.stdout.write(out)
        sys.stderr.write(r.stderr)
        return r.returncode


if __name__ == "__main__":
    os.environ.setdefault("MYPY_CACHE_DIR", str(ROOT / ".mypy_cache"))
    sys.exit(main())
