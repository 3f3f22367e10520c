"""Application logs set 37 missed, by class: a code ending a "failed to ..." message glued to the next record, a code
met at the device's setup, X's wrapped messages, a program's boxed messages, gpu_burn's own output. Values from the
public pastes cited (the corpus folders fix37a-* and s37-* hold them whole)."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.catalog import error_codes
from gpuadvisor.facts import KernelEvent
from gpuadvisor.importers import app_log, gpu_burn, xorg_log
from tests.corpus_cases import import_paste

CORPUS = Path(__file__).parent / "corpus"

# https://github.com/ollama/ollama/issues/8271 (ollama's C shim prints the code with no newline before Go's record)
OLLAMA_46 = (
    "Dec 31 01:21:28 FORGE ollama[555324]: cuda driver library failed to get device context 46time=2024-12-31T01:21:"
    '28.358-05:00 level=WARN source=gpu.go:449 msg="error looking up nvidia GPU memory"'
)


def test_a_code_ending_a_failed_to_message_is_read_even_glued_to_the_next_record() -> None:
    assert error_codes.numbers(OLLAMA_46, "CUDA") == [46]
    e = error_codes.find(OLLAMA_46)
    assert e is not None and (e.library, e.code) == ("CUDA", 46)
    # a device's number after "failed to ..." is no code
    assert error_codes.numbers("CUDA failed to initialize device 2", "CUDA") == []


def _events(lines: list[str]) -> list[KernelEvent]:
    return [KernelEvent(kind="driver-stack", code=999, text=x, line=n) for n, x in enumerate(lines, 1)]


def test_unknown_error_at_the_device_setup_warns_once_and_fails_again() -> None:
    e = error_codes.find("cuCtxCreate(): unknown error")
    assert e is not None and (e.library, e.code) == ("CUDA", 999)
    # https://github.com/hashcat/hashcat/issues/4564: hashcat run three times, each 'cuCtxCreate(): unknown error'
    three = [
        KernelEvent(kind="driver-stack", code=999, text="cuCtxCreate(): unknown error", line=n) for n in (5, 15, 27)
    ]
    assert error_codes.verdict(e, three) == "fail"
    assert error_codes.verdict(e, three[:1]) == "warn"
    # the same code from a call in the middle of the job says nothing of the node by itself
    assert error_codes.verdict(e, _events(["cuMemFree(): unknown error", "cuMemFree(): unknown error"])) == "info"


def test_a_log_repeating_its_line_with_new_time_stamps_counts_each_repeat() -> None:
    e = error_codes.find(OLLAMA_46)
    assert e is not None
    lines = [OLLAMA_46.replace("28.358", f"28.{n}58") for n in (3, 6, 8)]
    seen = [KernelEvent(kind="driver-stack", code=46, text=x, line=n) for n, x in enumerate(lines, 1)]
    assert error_codes.attempts(seen) == 3 and error_codes.verdict(e, seen) == "fail"


def test_old_modprobe_and_x_say_the_kernel_module_is_not_loaded() -> None:
    # https://github.com/MrMEEE/bumblebee-Old-and-abbandoned/issues/71
    for line in (
        "FATAL: Module nvidia not found.",
        "(EE) NVIDIA: Failed to load the NVIDIA kernel module. Please check your",
    ):
        e = error_codes.find(line)
        assert e is not None and (e.library, e.code) == ("NVML", 9), line


def test_x_wrapped_message_with_the_readme_placeholder_is_read_with_no_bus() -> None:
    # the NVIDIA driver README 390.151, Common Problems
    text = (
        CORPUS / "s37-logs/xorg-ee-nvidia-kernel-module-not-receiving-interrupts-placeholder-bus-readme-390_nvidia.txt"
    )
    evs = xorg_log.events(text.read_text(), 1)
    assert [(e.kind, e.bus_id, e.line) for e in evs] == [("gpu-no-interrupts", None, 1)]
    # a wrapped message naming its bus still names it (Xorg log, GPU at PCI:82:0:0 = 0000:52:00.0)
    wrapped = (
        "[    14.524] (EE) NVIDIA(GPU-0): Failed to initialize the NVIDIA GPU at PCI:82:0:0.  Please\n"
        "[    14.524] (EE) NVIDIA(GPU-0):     check your system's kernel log for additional error\n"
    )
    assert [(e.kind, e.bus_id) for e in xorg_log.events(wrapped, 1)] == [("gpu-init-failed", "0000:52:00.0")]


def test_open_mpi_boxed_help_messages_are_a_program_output() -> None:
    # https://github.com/open-mpi/ompi/issues/3286
    text = CORPUS / "fix37a-logs/openmpi-3-x-failed-to-modify-qp-ud-oob-then-mpirun-nothing-to-do_cshanbo.txt"
    lines = text.read_text().splitlines()
    assert app_log.starts(lines, 1, None)
    # a rule line with no closing rule is no box
    assert not any(app_log._boxed(["-" * 74, "Failed to create a completion queue (CQ):", "Hostname: x"]))


def test_gpu_burn_progress_line_gives_each_gpu() -> None:
    # https://github.com/wilicc/gpu-burn/issues/69: eight workers DIED, temps 29-31 C
    path = CORPUS / "s37-app-logs/gpu-burn-8-workers-all-died-negative-counts-30pct-aborting_wang-davie.txt"
    rig = gpu_burn.parse(path.read_text(), "p")
    assert [g.index for g in rig.gpus] == list(range(8))
    assert any("GPU 0, 1, 2, 3, 4, 5, 6, 7 died" in p for p in rig.problems)
    assert any("No clients are alive" in p for p in rig.problems)
    assert not rig.node.health_checks


def test_gpu_burn_faulty_verdicts_are_failed_checks(tmp_path: Path) -> None:
    # https://github.com/wilicc/gpu-burn/issues/12: 16 GPUs, every one FAULTY
    path = CORPUS / "fix37a-gpu-burn/gpu-burn-16-gpus-negative-warning-counts-all-faulty-exit-0_bladernr.txt"
    rig = gpu_burn.parse(path.read_text(), "p")
    assert len(rig.gpus) == 16
    assert [c.gpus for c in rig.node.health_checks or []] == [[n] for n in range(16)]
    scan = import_paste(tmp_path, path.read_text())
    assert {f["severity"] for f in scan["findings"] if f["code"] == "GA827"} == {"warn"}
