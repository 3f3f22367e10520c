"""Reports read on a phone (420 px), laid out by headless Chromium: no page wider than the window. The fleet page's
drain list (node, why, evidence, what to do) overflowed to 785 px; now each node to drain is a card."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from browser import find_chromium, layout_metrics

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(find_chromium() is None, reason="chromium not installed (apt-get install -y chromium)"),
]
ROOT = Path(__file__).resolve().parent.parent


def gpuadvisor(*args: str, host: str = "h") -> None:
    env = {"PATH": "/usr/bin:/bin", "GPUADVISOR_HOSTNAME": host}
    p = subprocess.run(
        [sys.executable, "-m", "gpuadvisor", *args], capture_output=True, text=True, env=env, timeout=300
    )
    assert p.returncode in (0, 1), p.stderr


def test_fleet_page_with_a_drain_list_fits_a_phone(tmp_path: Path) -> None:
    scans = tmp_path / "scans"
    scans.mkdir()
    for host in ("node-a", "node-b", "node-c"):
        gpuadvisor("scan", "--simulate", "dgx-h100", "--json", str(scans / f"{host}.json"), host=host)
    planted = str(ROOT / "examples" / "planted-dgx-h100.toml")
    gpuadvisor("scan", "--simulate", planted, "--json", str(scans / "node-bad.json"), host="node-bad")
    page = tmp_path / "fleet.html"
    gpuadvisor("fleet", str(scans), "--html", str(page))
    m = layout_metrics(page.read_text(encoding="utf-8"), 420, tmp_path, probe="table.drain tbody tr")
    assert m["scrollWidth"] <= m["clientWidth"] == 420, m["overflow"]
    (row,) = m["probe"]
    assert row["text"].startswith("node-bad") and row["left"] >= 0 and row["right"] <= 420
