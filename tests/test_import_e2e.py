"""Import -> findings -> strategy -> HTML from the real samples alone, and the `gpuadvisor import` command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpuadvisor import facts
from gpuadvisor.importers import import_files, import_texts

SAMPLES = Path(__file__).parent / "fixtures" / "import" / "samples"
OWN = Path(__file__).parent / "fixtures" / "import" / "own"


def _pipeline():
    from gpuadvisor import advisor, rules
    from gpuadvisor.render import html

    return rules, advisor, html


def test_v100_topology_and_nvlink_to_findings_strategy_html() -> None:
    rules, advisor, html = _pipeline()
    rig = import_files(
        [SAMPLES / "topo-m_8xv100-sxm2-nv1nv2-nic_lukolszewski.txt", SAMPLES / "nvlink-s_8xv100-sxm2_lukolszewski.txt"]
    )
    findings = rules.evaluate(rig)
    assert rig.findings == findings
    cross = [f for f in findings if f.code == "GA201"]  # the SYS pairs of the hybrid cube mesh
    assert len(cross) == 1 and cross[0].severity == "warn"
    assert "0-5" in cross[0].message and "3-6" in cross[0].message
    assert not [f for f in findings if f.severity in ("fail", "error")]
    advice = advisor.advise(rig, advisor.Workload.from_options(model="llama-3-8b"))
    assert rig.advice is not None and rig.advice["pick"] and advice is not None
    page = html.render_html(rig)
    assert page.lstrip().lower().startswith("<!doctype html")
    assert "Tesla V100-SXM2-32GB" in page and "GA201" in page and "imported" in page.lower()
    assert rig.advice["pick"].split(" ")[0] in page


def test_3xa6000_unbridged_card_is_found_from_nvlink_and_topo() -> None:
    rules, _advisor, _html = _pipeline()
    rig = import_files(
        [
            SAMPLES / "topo-m_3xa6000-nvlink-bridge-nv4_siboehm.txt",
            SAMPLES / "nvlink-s_3xa6000-one-unbridged_siboehm.txt",
        ]
    )
    findings = rules.evaluate(rig)
    (f,) = [f for f in findings if f.code == "GA204"]
    assert (f.severity, f.gpus, f.observed) == ("warn", [2], {"active_links": 0, "inactive_links": []})
    assert f.expected == {"active_links": 4}


@pytest.mark.parametrize(
    "name", ["smi-q_2xv100-r470-throttle-lost-gpu.txt", "lspci-vv_dgx1-plx-switch-x8.txt", "smi_2xv100-r470-table.txt"]
)
def test_a_gpu_that_fell_off_the_bus_is_a_failure(name: str) -> None:
    rules, _advisor, _html = _pipeline()
    rig = import_files([OWN / name])
    (f,) = [f for f in rules.evaluate(rig) if f.code == "GA315"]
    assert (f.severity, f.gpus, f.subject) == ("fail", [2], "GPU 2 0000:3b:00.0")
    assert f.observed["reason"].startswith(facts.GPU_LOST)


def test_idle_a40s_at_gen1_are_info_not_warnings() -> None:
    # GPUs 0 and 3 of the 10x A40 sample show "SW Power Cap: Active" and no idle reason, but P8, 0 % and
    # 25-30 W of 300 W: idle. Their Gen1 link is the power-saving state, like the other eight's.
    rules, _advisor, _html = _pipeline()
    rig = import_files([SAMPLES / "smi-q_a40x10_thamada.txt"])
    assert [g.performance_state for g in rig.gpus] == [8] * 10
    (f,) = [f for f in rules.evaluate(rig) if f.code == "GA102"]  # one finding for ten idle GPUs, not ten
    assert (f.gpus, f.severity, f.subject) == (list(range(10)), "info", "GPUs 0, 1, 2, 3, 4, 5, 6, 7, 8, 9")
    assert f.message.startswith(
        "GPUs 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 run at PCIe Gen1 where both ends support Gen4 "
        "(current_link_gen=1, max_link_gen=4) while the GPUs were idle (P8)"
    )


def test_x8_card_at_x4_is_not_told_to_move_to_an_x16_slot() -> None:
    rules, _advisor, _html = _pipeline()
    rig = import_files([SAMPLES / "smi-q_rtx4060ti_thamada.txt"])  # RTX 4060 Ti: an x8 card, GPU 0 at x4
    (f,) = [f for f in rules.evaluate(rig) if f.code == "GA101"]
    assert (f.severity, f.gpus, f.observed, f.expected) == (
        "fail",
        [0],
        {"current_link_width": 4},
        {"max_link_width": 8},
    )
    assert (
        f.fix
        == "reseat the card or move it to a slot wired for x8 or more; check the riser and the slot's BIOS bifurcation "
        "setting"
    )


def test_imported_scan_says_how_to_give_the_psu_rating() -> None:
    rules, _advisor, _html = _pipeline()
    rig = import_files([SAMPLES / "smi-q_h100sxmx8_thamada.txt"])
    (f,) = [f for f in rules.evaluate(rig) if f.code == "GA405"]
    assert (f.severity, f.message) == ("not-checked", "PSU rating not given (set it in a rig spec or pass --psu-watts)")


def test_two_node_h100_all_reduce_is_not_compared_with_the_one_node_reference() -> None:
    rules, _advisor, _html = _pipeline()
    rig = import_files([SAMPLES / "nccl-allreduce_gcp-a3mega-2x8xh100_lessizzmore.txt"])
    (f,) = [f for f in rules.evaluate(rig) if f.code == "GA602"]
    assert f.severity == "not-checked"
    assert f.message == (
        "all-reduce (16 ranks, nccl): no expected figure (ranks on several hosts: the network is not in the "
        "link facts) and no published reference for 16 ranks of this GPU model"
    )


def _one_gpu_lspci(text: str) -> str:
    return "\n".join(x for x in text.splitlines() if not x.startswith("#"))


def test_lspci_of_the_gpu_alone_does_not_claim_the_slot_supports_its_maximum() -> None:
    # `lspci -vvv -s 01:00.0` of an RTX 6000 Ada at 2.5GT/s: LnkCap 16GT/s is the card's; the slot's is unknown.
    rules, _advisor, _html = _pipeline()
    text = _one_gpu_lspci((SAMPLES / "lspci-vvv_rtx6000ada-downgraded-2.5gts_stelline-asus.txt").read_text())
    rig = import_texts([("lspci.txt", text)])
    (f,) = [f for f in rules.evaluate(rig) if f.code == "GA102"]
    assert f.severity == "info"
    assert f.message.startswith(
        "GPU 0 0000:01:00.0 runs at PCIe Gen1 where the GPU supports Gen4 (its slot's maximum is not in this "
        "scan: lspci of the GPU alone) (current_link_gen=1, max_link_gen=4)"
    )
    # the same card trained at x8: a fault, or an x16 card in a slot wired x8 - the scan cannot tell which
    rig = import_texts(
        [
            (
                "lspci.txt",
                text.replace(
                    "LnkSta:\tSpeed 2.5GT/s (downgraded), Width x16", "LnkSta:\tSpeed 16GT/s, Width x8 (downgraded)"
                ).replace(
                    "LnkSta: Speed 2.5GT/s (downgraded), Width x16", "LnkSta: Speed 16GT/s, Width x8 (downgraded)"
                ),
            )
        ]
    )
    (f,) = [f for f in rules.evaluate(rig) if f.code == "GA101"]
    assert (f.severity, f.observed, f.expected) == ("warn", {"current_link_width": 8}, {"max_link_width": 16})
    assert (
        "runs at x8 where the card supports x16 (its slot's maximum is not in this scan: lspci of the GPU alone): a "
        "fault, "
        "or a slot wired for fewer lanes (current_link_width=8, max_link_width=16)" in f.message
    )


def test_lspci_of_the_gpu_alone_with_nvidia_smi_q_keeps_nvml_slot_maximum() -> None:
    rules, _advisor, _html = _pipeline()
    lines = (OWN / "lspci-vv_dgx1-plx-switch-x8.txt").read_text().splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("07:00.0"))
    end = next(i for i, x in enumerate(lines) if i > start and x and not x[0].isspace())
    rig = import_texts(
        [
            ("q.txt", (OWN / "smi-q_2xv100-r470-throttle-lost-gpu.txt").read_text()),
            ("lspci.txt", "\n".join(lines[start:end])),
        ]
    )
    (f,) = [f for f in rules.evaluate(rig) if f.code == "GA101" and f.severity != "not-checked"]
    assert (f.severity, f.gpus) == ("fail", [1])  # -q's Link Width Max is NVML's: card and slot
    assert "where its slot and card support x16" in f.message


def test_mig_na_on_gpus_without_mig_is_not_a_gap() -> None:
    rules, _advisor, _html = _pipeline()
    rig = import_files([SAMPLES / "smi-q_l4_thamada.txt"])  # "MIG Mode / Current : N/A" on an L4
    assert (
        rig.gpus[0].unavailable["mig_mode"]
        == f"{facts.NOT_SUPPORTED} (nvidia-smi prints MIG Mode N/A on GPUs without MIG)"
    )
    assert [f for f in rules.evaluate(rig) if f.code == "GA314"] == []


def test_nccl_measurement_is_judged_and_used_by_the_advisor() -> None:
    rules, advisor, html = _pipeline()
    rig = import_files([SAMPLES / "nccl-allreduce_tinybox-6x4090-p2p-single-size_tinygrad.txt"])
    (m,) = rig.measurements
    findings = rules.evaluate(rig)
    ga602 = [f for f in findings if f.code == "GA602"]
    assert ga602, "the collective-bandwidth rule must look at the imported all-reduce"
    # No PCIe facts in an nccl-tests log alone, no published 6x RTX 4090 figure: judged "not checked", with why.
    assert ga602[0].severity == "not-checked" and "all-reduce (6 ranks, nccl)" in ga602[0].message
    assert m.unavailable["expected_gbps"].startswith("no PCIe link facts")
    advisor.advise(rig, advisor.Workload.from_options(model="gpt2"))
    assert rig.advice["pick"] == "DDP"
    page = html.render_html(rig)
    assert "24.58" in page and "NVIDIA GeForce RTX 4090" in page


def test_smi_q_samples_to_findings_strategy_html() -> None:
    rules, advisor, html = _pipeline()
    l4 = import_files([SAMPLES / "smi-q_l4_thamada.txt"])
    (f,) = [f for f in rules.evaluate(l4) if f.code == "GA101"]
    assert f.severity == "fail" and f.gpus == [0] and "x8" in f.message
    a100 = import_files([SAMPLES / "smi-q_a100sxmx4_thamada.txt"])
    (remap,) = [f for f in rules.evaluate(a100) if f.code == "GA306"]
    assert remap.gpus == [1]
    h100 = import_files([SAMPLES / "smi-q_h100sxmx8_thamada.txt"])
    rules.evaluate(h100)
    advisor.advise(h100, advisor.Workload.from_options(model="llama-3-8b"))
    assert h100.advice["fits"] is True
    for rig in (l4, a100, h100):
        assert "<svg" in html.render_html(rig)


def test_own_inputs_fire_the_rules_they_were_written_for() -> None:
    rules, _, _ = _pipeline()
    rig = import_files([OWN / "smi-q_2xv100-r470-throttle-lost-gpu.txt", OWN / "lspci-vv_dgx1-plx-switch-x8.txt"])
    codes = {(f.code, tuple(f.gpus)) for f in rules.evaluate(rig) if f.severity in ("warn", "fail")}
    assert ("GA101", (1,)) in codes  # x8 of x16
    assert ("GA310", (1,)) in codes  # hardware power brake
    assert ("GA312", (1,)) in codes  # 250 W of a 300 W default
    assert ("GA304", (0,)) in codes  # retired page pending
    rig = import_files([SAMPLES / "smi-q_a100sxmx4_thamada.txt", OWN / "nvlink-status_4xa100-two-inactive.txt"])
    (down,) = [f for f in rules.evaluate(rig) if f.code == "GA204"]
    assert down.gpus == [2] and down.severity == "fail"


# -- the command ------------------------------------------------------------------------------------------


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpuadvisor", *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )


def test_cli_import_writes_a_scan_that_loads(tmp_path: Path) -> None:
    out = tmp_path / "scan.json"
    p = run(
        "import",
        str(SAMPLES / "topo-m_3xa6000-nvlink-bridge-nv4_siboehm.txt"),
        str(SAMPLES / "nvlink-s_3xa6000-one-unbridged_siboehm.txt"),
        "--json",
        str(out),
    )
    assert p.returncode == 0, p.stderr
    assert "IMPORTED from" in p.stdout and "NVIDIA RTX A6000" in p.stdout
    assert f"scan saved to {out} (3 GPUs, 0 measurements)" in p.stderr
    rig = facts.load(out)
    assert rig.source.kind == "imported" and len(rig.source.files) == 2
    assert rig.topology.matrix[0] == ["X", "NV4", "NODE"]
    assert rig.origins["gpus[0].nvlinks"].endswith(
        "nvlink-s_3xa6000-one-unbridged_siboehm.txt:5 (nvidia-smi nvlink -s)"
    )


def test_cli_import_json_to_stdout_and_origins(tmp_path: Path) -> None:
    p = run("import", str(OWN / "nccl-allgather_8xh100-new-header.txt"), "--json", "-")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["measurements"][0]["kind"] == "all_gather" and data["measurements"][0]["value_gbps"] == 209.1
    p = run("import", str(SAMPLES / "smi-q_l4_thamada.txt"), "--origins")
    assert (
        p.returncode == 0
        and "gpus[0].pcie.current_width: " in p.stdout
        and "smi-q_l4_thamada.txt:77 (nvidia-smi -q)" in p.stdout
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "no files given"),
        (("/nonexistent/x.txt",), "/nonexistent/x.txt: no such file"),
    ],
)
def test_cli_errors_are_one_line_and_exit_2(args: tuple[str, ...], message: str) -> None:
    p = run("import", *args)
    assert p.returncode == 2
    assert p.stderr.strip().count("\n") == 0 and message in p.stderr and "Traceback" not in p.stderr


def test_cli_unrecognised_file(tmp_path: Path) -> None:
    f = tmp_path / "notes.txt"
    f.write_text("the vendor says the GPUs are fine\n")
    p = run("import", str(f))
    assert p.returncode == 2
    assert (
        p.stderr
        == f"gpuadvisor: error: {f}: line 1: not recognised as nvidia-smi (-q, -q -x, topo -m, topo -p2p, nvlink -s, "
        "-L, mig -lgi, vgpu, plain, --query-gpu, dmon, or --version), NCCL (NCCL_TOPO_DUMP_FILE), PyTorch collect_env, "
        "detectron2 collect_env, PyTorch Lightning collect_env_details, PaddleSeg environment info, "
        "torch.__config__.show(), "
        "ML environment reports (Hugging Face env, ds_report, jax, pip or conda list, or cupy show_config), lspci -vv, "
        "sysfs (PCI attributes), nccl-tests, UCC (ucc_perftest), "
        "CUDA samples (bandwidthTest, busGrind, "
        "p2pBandwidthLatencyTest, latency table, simpleP2P, deviceQuery, or matrix rows), "
        "DIGITS (device_query.py), cuda_memtest, GPGPU course libgpu, "
        "nvbandwidth, dcgmproftester, DCGM, "
        "/proc/driver/nvidia/gpus/*/information, /proc/driver/nvidia/gpus/*/power, "
        "nvidia-container-cli (info), incus (info --resources), club-3090 (report.sh), "
        "Akash provider-services (tools psutil list gpu), detect-gpu (NVML JSON), "
        "numba cuda.detect(), ML framework logs (llama.cpp, ollama, TensorFlow, PyTorch, PaddlePaddle, or ComfyUI), "
        "nvitop, gpustat, "
        "Folding@home (FAHClient --lspci), stress tests (gpu_burn), /proc/driver/nvidia/version, CUDA toolkit, "
        "driver packages, "
        "or other environment reports output, "
        "nor as a kernel or service log, RDMA, fabric manager or storage output "
        "(import --help) (it "
        "starts 'the vendor says the GPUs are fine')\n"
    )


def test_cli_help_names_what_to_run() -> None:
    p = run("import", "--help")
    assert p.returncode == 0 and "nvidia-smi topo -m > topo.txt" in p.stdout and "sudo lspci -vv" in p.stdout
