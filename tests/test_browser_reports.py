"""Every HTML report the tool writes, made as a user makes it (the command line), laid out by headless Chromium at a
desktop (1280 px) and a phone (420 px) width: the page no wider than the window, nothing sticking out of it, no
text below 11 px, and no card or table row taller than a reader scrolls past comfortably (the plan's build cards
were 250 px of one short figure a line; the advisor's candidate rows 160 px).

The reports: the scan report (``report``), the same with the advisor's strategy (``scan --model``), with storage
(an imported ``nvidia-smi -q -x``, ``lsblk -J``, fio JSON and ``nvme list``), the pre-purchase plan (``plan
--html``, the built-in builds, and builds with ``[storage]`` drives and a long name), and the fleet report with a
node to drain. A screenshot of each at 420 px is written to ``$GPUADVISOR_SCREENSHOTS`` (a directory) when it is
set, else to the test's temporary directory.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest
from browser import find_chromium, layout_metrics, png_size, screenshot

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(find_chromium() is None, reason="chromium not installed (apt-get install -y chromium)"),
]
ROOT = Path(__file__).resolve().parent.parent
STORAGE = ROOT / "tests" / "fixtures" / "storage"
MIN_TEXT_PX = 11
LONG_NAME = "dual-socket-" + "x" * 60  # a build name without a break in it, as a user's TOML may give


def gpuadvisor(*args: str, host: str = "h") -> None:
    env = {"PATH": "/usr/bin:/bin", "GPUADVISOR_HOSTNAME": host}
    p = subprocess.run(
        [sys.executable, "-m", "gpuadvisor", *args], capture_output=True, text=True, env=env, timeout=300, cwd=ROOT
    )
    assert p.returncode in (0, 1), p.stderr


def _storage_builds(tmp: Path) -> list[str]:
    base = (resources.files("gpuadvisor.plan.builds") / "4x4090-tr-pro.toml").read_text(encoding="utf-8")
    head = base.partition("\n[")[0]
    out = []
    for name, storage in (
        ("two-raid0", '[storage]\ndrive = "samsung-990-pro-2tb"\ncount = 2\nraid = 0\nprice_usd = 180\n'),
        (LONG_NAME, '[storage]\ndrive = "samsung-870-evo-2tb"\ncount = 3\n'),
    ):
        p = tmp / f"{name[:20]}.toml"
        p.write_text(re.sub(r'(?m)^name = ".*"$', f'name = "{name}"', head) + "\n" + storage, encoding="utf-8")
        out.append(str(p))
    return out


def make_report(kind: str, tmp: Path) -> Path:
    """The HTML report of ``kind`` written by the command line into ``tmp``."""
    page = tmp / f"{kind}.html"
    if kind == "scan":
        gpuadvisor("report", "--simulate", "dgx-h100", "--html", str(page))
    elif kind == "advise":
        gpuadvisor("scan", "--simulate", "4x4090-pcie", "--model", "llama-3-70b", "--html", str(page))
    elif kind == "storage":
        scan = tmp / "storage-scan.json"
        smi = ROOT / "tests" / "fixtures" / "import" / "own" / "smi-q-x_v100-r470.xml"
        files = [STORAGE / n for n in ("lsblk-vm.json", "fio-seqread-vm.json", "nvme-list-2x.txt")]
        gpuadvisor("import", str(smi), *map(str, files), "--json", str(scan))
        gpuadvisor("report", str(scan), "--html", str(page))
    elif kind == "plan":
        gpuadvisor("plan", "--model", "llama-3-70b", "--task", "qlora", "--tokens", "2e8", "--html", str(page))
    elif kind == "plan-storage":
        builds = _storage_builds(tmp)
        gpuadvisor("plan", *builds, "4x4090-7950x", "--model", "llama-3-70b", "--task", "full", "--html", str(page))
    elif kind == "fleet":
        scans = tmp / "scans"
        scans.mkdir()
        for host in ("node-a", "node-b", "node-c"):
            gpuadvisor("scan", "--simulate", "dgx-h100", "--json", str(scans / f"{host}.json"), host=host)
        planted = str(ROOT / "examples" / "planted-dgx-h100.toml")
        gpuadvisor("scan", "--simulate", planted, "--json", str(scans / "node-bad.json"), host="node-bad")
        gpuadvisor("fleet", str(scans), "--html", str(page))
    else:
        raise ValueError(kind)
    assert page.stat().st_size > 0
    return page


# Per report: what a card or a row is, and the tallest one may be at each width (px). A card holds a few lines
# of label and figure; a row of a table, one or two lines (three where a reason wraps).
CARDS = {
    "scan": ("table.gpus tbody tr", {1280: 60, 420: 400}),  # at 420 px one card per GPU, every field labelled
    "advise": ("table.cand tr", {1280: 140, 420: 80}),  # at 420 px the table scrolls in its box, rows unwrapped
    "storage": ("section#storage tr", {1280: 60, 420: 80}),
    "plan": ("table.builds tbody tr", {1280: 110, 420: 200}),  # at 420 px one card per build
    "plan-storage": ("table.builds tbody tr", {1280: 110, 420: 240}),
    "fleet": ("table.drain tbody tr", {1280: 200, 420: 260}),  # at 420 px one card per node to drain
}


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return {}


@pytest.mark.parametrize("width", [1280, 420])
@pytest.mark.parametrize("kind", list(CARDS))
def test_every_report_fits_the_window_with_sane_cards(reports, tmp_path_factory, tmp_path, kind, width):
    if kind not in reports:
        reports[kind] = make_report(kind, tmp_path_factory.mktemp(kind))
    page = reports[kind].read_text(encoding="utf-8")
    selector, tallest = CARDS[kind]
    m = layout_metrics(page, width, tmp_path, probe=selector)
    assert m["clientWidth"] == width
    assert m["scrollWidth"] <= width, m  # no sideways scrolling of the page (a wide table scrolls in its own box)
    assert m["overflow"] == [], m
    assert m["minFont"] >= MIN_TEXT_PX, m
    cards = [c for c in m["probe"] if c["height"] > 0]
    assert cards, f"{kind}: no {selector} laid out"
    heights = sorted((round(c["height"]), c["text"][:30]) for c in cards)
    assert heights[-1][0] <= tallest[width], heights[-3:]
    if width == 420:
        shots = Path(os.environ.get("GPUADVISOR_SCREENSHOTS") or tmp_path)
        shots.mkdir(parents=True, exist_ok=True)
        png = screenshot(reports[kind], shots / f"{kind}-420px.png", window=(420, min(16000, m["scrollHeight"])))
        assert png_size(png)[0] == 420


def test_plan_cards_on_a_phone_one_figure_a_line_beside_its_label(reports, tmp_path_factory, tmp_path):
    """The plan's ranked builds at 420 px: one card each, rank and name on its first line, then each figure on a
    line of its own with its label in a column beside it (the figure starts at the same x on every line)."""
    if "plan" not in reports:
        reports["plan"] = make_report("plan", tmp_path_factory.mktemp("plan"))
    cells = ", ".join(f"table.builds td[data-label='{c}']" for c in ("#", "build", "fits", "time", "price"))
    m = layout_metrics(reports["plan"].read_text(encoding="utf-8"), 420, tmp_path, probe=cells)
    rows = [m["probe"][i : i + 5] for i in range(0, len(m["probe"]), 5)]
    assert len(rows) >= 20
    for rank, build, fits, time_, price in rows:
        assert rank["right"] <= build["left"]  # the rank beside the name, not above it
        assert fits["left"] == time_["left"] == price["left"] and fits["right"] - fits["left"] >= 0.8 * 420
        assert time_["height"] < 30 and price["height"] < 30  # one line each
