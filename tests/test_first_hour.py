"""Issue 13, the first hour of a new user: verdicts that say what was established, output that fits the terminal,
presets that are real machines, sources users can read."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpuadvisor import facts
from gpuadvisor.collect import collect_live
from gpuadvisor.render.text.findings import render_findings
from gpuadvisor.rules import evaluate
from gpuadvisor.rules.summary import no_gpu_hint, one_line, rig_verdict

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = Path(__file__).parent / "fixtures" / "import" / "samples"


def run(
    *args: str, columns: int | None = 80, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    e = {**os.environ, **(env or {})}
    e.pop("NO_COLOR", None)
    if columns is None:
        e.pop("COLUMNS", None)
    else:
        e["COLUMNS"] = str(columns)
    return subprocess.run(
        [sys.executable, "-m", "gpuadvisor", *args], capture_output=True, text=True, env=e, timeout=120, cwd=cwd
    )


class _NoLibrary:
    def nvmlInit(self):
        raise OSError("libnvidia-ml.so.1: cannot open shared object file")


# -- verdicts ------------------------------------------------------------------------------------------------


def test_no_gpu_is_its_own_verdict_in_text_json_and_html(tmp_path):
    rig = collect_live(nvml_lib=_NoLibrary(), sysfs_root=tmp_path)
    evaluate(rig)
    v = rig_verdict(rig)
    assert (v.state, v.headline, v.why) == ("no-gpus", "No GPUs found", facts.NO_LIBRARY)
    assert v.todo.startswith("no NVIDIA driver is installed (libnvidia-ml.so is missing)")
    assert rig.verdict["state"] == "no-gpus"  # in the scan JSON too
    text = render_findings(rig.findings, color=False, rig=rig, width=80)
    assert "Verdict: NO GPUS FOUND (NVML library not found)" in text and "healthy" not in text
    from gpuadvisor.render.html import render_html

    html = render_html(rig)
    assert 'data-state="no-gpus"' in html and "No GPUs found" in html and "Healthy" not in html


@pytest.mark.parametrize(
    ("reason", "env", "container", "expected"),
    [
        (
            facts.NO_LIBRARY,
            {},
            "/.dockerenv",
            "this is a container (/.dockerenv exists) without the NVIDIA runtime: run it with 'docker run --gpus all'",
        ),
        (facts.NO_LIBRARY, {}, None, "no NVIDIA driver is installed"),
        (facts.NO_DRIVER, {}, None, "the NVIDIA kernel module is not loaded: 'sudo modprobe nvidia'"),
        (
            "NVML found no GPU",
            {"NVIDIA_VISIBLE_DEVICES": "void"},
            "/.dockerenv",
            "NVIDIA_VISIBLE_DEVICES='void' asks the NVIDIA container runtime for no GPU",
        ),
        (
            "NVML found no GPU",
            {"CUDA_VISIBLE_DEVICES": ""},
            None,
            "CUDA_VISIBLE_DEVICES='' also hides every GPU from CUDA programs: unset it",
        ),
    ],
)
def test_no_gpu_hint_is_picked_from_the_facts(reason, env, container, expected):
    assert expected in no_gpu_hint(reason, env, container)


def test_live_no_gpu_container_marker_is_read_below_the_sysfs_root(tmp_path):
    (tmp_path / ".dockerenv").write_text("")
    rig = collect_live(nvml_lib=_NoLibrary(), sysfs_root=tmp_path)
    assert "this is a container (/.dockerenv exists)" in rig.problems[0]


def test_check_agrees_no_gpu_exits_2_and_scan_exits_0_with_the_verdict(tmp_path):
    scan = tmp_path / "s.json"
    out = run("scan", "--json", str(scan))  # this machine has no NVIDIA GPU
    assert out.returncode == 0, out.stderr
    assert "Verdict: NO GPUS FOUND" in out.stdout and "Verdict: healthy" not in out.stdout
    assert json.loads(scan.read_text())["verdict"]["state"] == "no-gpus"
    chk = run("check", "--from", str(scan))
    assert chk.returncode == 2 and "no GPU to check" in chk.stderr


def test_red_verdict_names_the_worst_findings(preset):
    rig = preset("4x4090-pcie")
    evaluate(rig)
    v = rig_verdict(rig)
    assert v.worst == ["GA101 GPU 2 0000:41:00.0 runs at x8 where its slot and card support x16"] and v.more == 0
    from gpuadvisor.render.html import render_html

    html = render_html(rig)
    block = html[html.index('<section id="verdict"') : html.index("</section>", html.index('<section id="verdict"'))]
    assert (
        '<ul class="worst"><li>GA101 GPU 2 0000:41:00.0 runs at x8 where its slot and card support x16</li></ul>'
        in block
    )


def test_warnings_verdict_names_the_warnings_without_their_evidence(preset):
    rig = preset("2x3090-nvlink")
    findings = evaluate(rig)
    assert [one_line(f) for f in findings if f.severity == "warn"] == [
        "GA103 GPU 0 0000:0a:00.0 supports x16 but its slot allows only x8: half or less of its host bandwidth is "
        "available",
        "GA103 GPU 1 0000:0b:00.0 supports x16 but its slot allows only x8: half or less of its host bandwidth is "
        "available",
    ]


def test_report_text_shows_findings_and_verdict(tmp_path):
    scan = tmp_path / "s.json"
    assert run("scan", "--simulate", "4x4090-pcie", "--json", str(scan)).returncode == 0
    out = run("report", str(scan))
    assert out.returncode == 0, out.stderr
    assert "FAIL   GA101 pcie-link-downgraded" in out.stdout
    assert (
        "Verdict: failing (1 fail, 2 warn, 1 info, 15 not checked)\n  FAIL GA101 GPU 2 0000:41:00.0 runs at x8"
        in out.stdout
    )


def test_import_of_an_nccl_tests_log_shows_the_table_and_the_findings():
    out = run("import", str(SAMPLES / "nccl-allreduce_tinybox-6x4090-p2p-single-size_tinygrad.txt"))
    assert out.returncode == 0, out.stderr
    assert (
        "Measured bandwidth" in out.stdout
        and "33554432       8388608     float     2275.1     14.75     24.58       0" in out.stdout
    )
    assert "\nFindings\n--------\n" in out.stdout
    # no GPU rule could judge a log alone, and the verdict says how little it rests on
    assert re.search(
        r"\nVerdict: healthy as far as checked \(\d+ not checked\)\n  \d+ of the \d+ rules could not be checked",
        out.stdout,
    )


def test_scan_bench_without_gpus_says_so_at_once_and_writes_the_report(tmp_path):
    html = tmp_path / "report.html"
    out = run("scan", "--bench", "--model", "llama-3-8b", "--html", str(html))
    assert out.returncode == 0, out.stderr
    assert (
        "gpuadvisor: no GPU found: nothing to benchmark on GPUs, --bench skipped"
        in out.stderr.splitlines()[-3 if "NumPy" in out.stderr else 0]
        or "nothing to benchmark on GPUs, --bench skipped" in out.stderr
    )
    assert "no strategy to advise for --model" in out.stderr
    assert html.exists() and 'data-state="no-gpus"' in html.read_text()
    assert "Measured bandwidth" not in out.stdout


def test_strategy_box_is_not_green_below_the_efficiency_target(preset):
    from gpuadvisor.advisor import Workload, advise
    from gpuadvisor.render.html import render_html

    rig = preset("dgx-h100")
    adv = advise(rig, Workload.from_options(model="llama-3-70b")).to_dict()  # ZeRO-3 + CPU offload: below 80% on 8 GPUs
    eff = adv["pick_detail"]["ideal_speed_fraction"]  # the advisor's one efficiency figure
    assert eff < 0.8
    html = render_html(rig)
    assert '<div class="pickbox below">' in html
    assert f"{eff:.0%} of the ideal speed, below the 80% the advisor aims for on 8 GPUs" in html
    rig = preset("dgx-h100")
    advise(rig, Workload.from_options(model="mistral-7b"))  # ZeRO-1 at ~100%
    assert '<div class="pickbox">' in render_html(rig)


# -- output a person can read ---------------------------------------------------------------------------------


def test_dgx2_identical_pcie_rows_collapse_and_fit_80_columns():
    out = run("scan", "--simulate", "dgx2-v100")
    lines = out.stdout.splitlines()
    assert max(len(ln) for ln in lines) <= 80
    assert len(lines) < 190  # was 242 lines, 112 of them identical per-hop rows (80 columns split the wide tables);
    # +7 for the "Beyond the GPU" section (kernel log, RDMA, GPUDirect, fabric, node limits)
    assert len(run("scan", "--simulate", "dgx2-v100", columns=200).stdout.splitlines()) < 117
    assert "  GPUs 0–15: 6/6 links active, NVLink 2: 6 to NVSwitch" in lines
    assert "  GPUs 0–15: Gen3 x16 / Gen3 x16 (15.8 GB/s per direction now), replays 0; the" in lines
    assert not any("downstream-port Gen3 x16" in ln for ln in lines)
    verbose = run("-v", "scan", "--simulate", "dgx2-v100").stdout
    assert verbose.count("downstream-port Gen3 x16 / Gen3 x16") == 32  # two per GPU: every hop with -v


def test_downgraded_gpu_keeps_its_hops_while_the_healthy_ones_share_a_line():
    out = run("scan", "--simulate", "4x4090-pcie", columns=200).stdout
    assert (
        "  GPUs 0, 1, 3: Gen4 x16 / Gen4 x16 (31.5 GB/s per direction now), replays 0; the same on both hops to the CPU"
        in out
    )
    assert "      0000:40:01.1  root-port       Gen4 x8 / Gen4 x16  width downgraded" in out


@pytest.mark.parametrize("columns", [80, 200])
def test_make_example_output_fits_the_terminal(tmp_path, columns):
    """The command `make example` runs (Makefile), at 80 and 200 columns: no line wraps."""
    make = (ROOT / "Makefile").read_text()
    cmd = re.search(r"^example:.*\n\t\$\(BIN\)/gpuadvisor (.+)$", make, re.M).group(1).split()
    out = run(*cmd, columns=columns, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    widths = [len(ln) for ln in (out.stdout + out.stderr).splitlines()]
    assert max(widths) <= columns, max(widths)
    if columns == 200:
        assert max(widths) > 80  # the width is used, not a fixed 80


def test_advise_short_by_default_and_explain_gives_the_rest():
    short = run("advise", "--simulate", "dgx-h100", "--model", "llama-3-70b").stdout
    full = run("advise", "--simulate", "dgx-h100", "--model", "llama-3-70b", "--explain", columns=200).stdout
    assert len(short.splitlines()) < 60 and len(full.splitlines()) > len(short.splitlines())
    assert (
        "Pick: ZeRO-3 + CPU offload + act. ckpt" in short
        and "torchrun --standalone --nnodes=1 --nproc_per_node=8" in short
    )
    assert "Assumptions:" not in short and "ds_config.json:" not in short
    assert "Assumptions:" in full and "Memory per GPU (GiB):" in full and "ds_config.json:" in full
    assert max(len(ln) for ln in short.splitlines()) <= 80


def test_user_facing_text_cites_no_project_file():
    texts = []
    for p in ("dgx-h100", "4x4090-pcie", "2x3090-nvlink", "dgx2-v100"):
        texts.append(run("advise", "--simulate", p, "--model", "llama-3-70b", "--explain").stdout)
        texts.append(run("scan", "--simulate", p).stdout)
    texts.append(run("rules").stdout)
    for code in (
        "GA103",
        "GA203",
        "GA206",
        "GA401",
        "GA402",
        "GA403",
        "GA405",
        "GA601",
        "GA602",
        "GA603",
        "GA604",
        "GA605",
        "GA606",
    ):
        texts.append(run("explain", code).stdout)
    texts.append(run("presets").stdout)
    bad = re.compile(r"PARALLELISM\.md|DESIGN\.md|shared/|issue \d|(?<![\w-])tests/|links\.py")
    hits = sorted({m.group(0) for t in texts for m in bad.finditer(t)})
    assert hits == []


def test_ram_findings_use_gib_like_the_rest_of_the_scan(fixtures_dir):
    rig = facts.load(fixtures_dir / "h100-vm" / "scan-live.json")
    (f,) = [f for f in evaluate(rig) if f.code == "GA402"]
    assert f.message == (
        "the host has 125.9 GiB of RAM for 79.6 GiB of GPU memory "
        "(guideline 2x = 159.3 GiB for heavy data loading or CPU offload)"
    )


# -- presets are real machines -----------------------------------------------------------------------------------


def test_nvml_version_string_follows_the_driver(preset):
    assert preset("dgx2-v100").software.nvml_version == "11.470.256.02"  # R470: CUDA 11.4
    assert preset("dgx-h100").software.nvml_version == "12.565.57.01"
    assert preset("2x3090-nvlink").software.nvml_version == "12.535.183.01"


def test_presets_driver_cuda_and_os_agree(preset):
    # The newest CUDA each driver branch supports (CUDA Toolkit release notes, table 3).
    branch_cuda = {"470": "11.4", "535": "12.2", "550": "12.4", "565": "12.7"}
    for name in ("dgx-h100", "dgx-a100", "4x4090-pcie", "2x3090-nvlink", "h100-pcie", "dgx2-v100"):
        sw = preset(name).software
        assert branch_cuda[sw.driver_version.split(".")[0]] == sw.cuda_driver_version, name
    host = preset("dgx2-v100").host
    assert (host.os, host.kernel) == ("Ubuntu 20.04.6 LTS", "5.4.0-150-generic")  # DGX OS 5 with R470


def test_a_healthy_verdict_on_thin_evidence_says_how_thin(tmp_path):
    """An nccl-tests log alone lets few rules run: its verdict is 'healthy as far as checked', says how many rules
    could not be checked, and the HTML box is not painted green. A full simulated scan keeps its green box."""
    import subprocess
    import sys
    from pathlib import Path

    sample = (
        Path(__file__).parent
        / "fixtures"
        / "import"
        / "samples"
        / "nccl-allreduce_tinybox-6x4090-p2p-single-size_tinygrad.txt"
    )
    scan = tmp_path / "n.json"
    run = [sys.executable, "-m", "gpuadvisor"]
    assert (
        subprocess.run([*run, "import", str(sample), "--json", str(scan)], capture_output=True, text=True).returncode
        == 0
    )
    out = subprocess.run(
        [*run, "report", str(scan)], capture_output=True, text=True, env={"COLUMNS": "200", "PATH": ""}
    ).stdout
    assert "Verdict: healthy as far as checked" in out
    assert re.search(r"(\d+) of the (\d+) rules could not be checked", out)
    html = tmp_path / "n.html"
    subprocess.run([*run, "report", str(scan), "--html", str(html)], capture_output=True, text=True, check=True)
    page = html.read_text()
    assert 'class="banner verdict healthy partial"' in page and "<h2>Healthy as far as checked</h2>" in page
    full = tmp_path / "full.html"
    subprocess.run(
        [*run, "scan", "--simulate", "dgx-h100", "--html", str(full)], capture_output=True, text=True, check=True
    )
    assert 'class="banner verdict healthy" data-state="healthy"' in full.read_text()
