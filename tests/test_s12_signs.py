"""Signs read from held-out set 12's real logs (tests/corpus/s12-*): a GPU left unusable by an invalid PCI region or
an unsupported kernel module, RDMA adapter errors, and NCCL's adapter events; each case names its source thread."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.importers.merge import parse_text
from gpuadvisor.importers.nccl_log import async_events, starts
from gpuadvisor.rules import evaluate
from probes.kmsg import parse_log
from probes.kmsg_signs import _bus

CORPUS = Path(__file__).parent / "corpus"


def _events(rel: str) -> list[tuple[str, str | None]]:
    events, _ = parse_log((CORPUS / rel).read_text())
    return [(e.kind, e.bus_id) for e in events]


def _found(rel: str) -> list[tuple[str, str, str]]:
    from gpuadvisor.importers.merge import import_files

    rig = import_files([CORPUS / rel])
    return sorted((f.code, f.severity, f.subject) for f in evaluate(rig) if f.severity in ("warn", "fail"))


def test_an_invalid_bar_names_the_gpu_on_the_wrapped_line() -> None:
    # https://github.com/ublue-os/bazzite/issues/2612: journalctl, the bus id on the NVRM continuation line
    assert _events("s12-logs/journal-bad-boot-nvrm-bar1-0m-invalid-pci-region-gpu-08-cut_sebmaster.txt") == [
        ("gpu-bar-invalid", "0000:08:00.0")
    ]
    assert _found("s12-logs/journal-bad-boot-nvrm-bar1-0m-invalid-pci-region-gpu-08-cut_sebmaster.txt") == [
        ("GA820", "fail", "GPU 0000:08:00.0")
    ]


def test_an_old_driver_prints_the_bus_without_its_domain() -> None:
    # old NVRM: "BAR1 is 0M @ 0x00000000 (PCI:0001:00.0)": bus 01, device 00, function 0
    assert _bus("0001:00.0") == "0000:01:00.0"
    assert _bus("0000:0a:00.0") == "0000:0a:00.0"
    assert _bus("0a:00.0") == "0000:0a:00.0"


def test_a_gpu_the_open_module_cannot_drive_is_unusable() -> None:
    # https://github.com/NVIDIA/open-gpu-kernel-modules/issues/322: a V100 (no GSP) with the open nvidia.ko
    rel = "s12-lost-gpu/dmesg-open-module-v100-not-supported-no-gsp-wrapped-cut_wenhaopang.txt"
    events, _ = parse_log((CORPUS / rel).read_text())
    (ev,) = events
    assert (ev.kind, ev.bus_id) == ("gpu-unsupported", "0000:af:00.0")
    assert "open kernel module" in ev.text and "10de:1db5" in ev.text


def test_the_fallen_off_the_bus_message_is_not_an_unsupported_gpu() -> None:
    # newer drivers open "fallen off the bus" with the same first line (probes/kmsg.py FELL_RE)
    text = (
        "[ 9.1] NVRM: The NVIDIA GPU 0000:b3:00.0 (PCI ID: 10de:26b5)\n"
        "[ 9.1] NVRM: installed in this system has\n"
        "[ 9.1] NVRM: fallen off the bus and is not responding to commands.\n"
    )
    events, _ = parse_log(text)
    assert [e.kind for e in events if e.kind == "gpu-unsupported"] == []


def test_mlx5_command_timeouts_warn_on_the_adapter() -> None:
    # https://github.com/openucx/ucx/issues/7738: pdsh-prefixed dmesg, CREATE_DCT commands time out
    rel = "s12-rdma-logs/pdsh-dmesg-mlx5-create-dct-cmd-timeouts-no-done-completion-b1360-cut_angainor.txt"
    assert {k for k, _ in _events(rel)} == {"hca-cmd-timeout"}
    assert _found(rel) == [("GA826", "warn", "RDMA adapter 0000:61:00.0")]


def test_nccl_warn_lines_with_a_source_location_and_launcher_prefixes_are_read() -> None:
    # https://github.com/NVIDIA/nccl/issues/1919 and /issues/1905: WARN lines name the source line that printed them
    assert starts("node-0:139577:139678 [0] transport/net_ib.cc:154 NCCL WARN NET/IB : mlx5_1:1 async fatal event")
    assert starts("[2025-11-09 07:39:30] h100-28:238:1313 [0] transport/net_ib.cc:139 NCCL WARN communicator")
    assert starts("2019-06-02T16:13:44.884Z: [1,12]<stdout>:c-57:815:864 [0] transport/net_ib.cu:80 NCCL WARN x")
    assert not starts("iter 83592: loss 1.5455, time: 4401.19ms")


def test_nccl_adapter_events_become_the_hosts_findings() -> None:
    # https://github.com/NVIDIA/nccl/issues/230: a fatal adapter error on one container host (three ranks)
    rel = "s12-nccl-debug/nccl-warn-mpirun-prefixed-local-catastrophic-error-2019-cut_amsword.txt"
    assert _found(rel) == [("GA826", "fail", "RDMA adapter on container-e275-1553839402050-12124-01-000057")]
    # https://github.com/Lightning-AI/lit-llama/issues/380: node48's port went down under the job (8 ranks)
    rel = "s12-nccl-debug/train-iters-then-nccl-warn-ib-port-error-8-ranks-node48-then-error-12-cut_lamone1.txt"
    lines = (CORPUS / rel).read_text().splitlines()
    seen = async_events(lines)
    assert len(seen) == 8 and {k for k, _, _ in seen} == {"link-down"} and seen[0][1].startswith("...-48: ")
    assert _found(rel) == [("GA822", "warn", "RDMA ...-48")]


def test_a_cut_table_row_keeps_the_cells_a_bar_closed() -> None:
    # https://github.com/allenai/PeerRead/issues/40: cut after GPU 2's power cell "59W / 400W |"
    path = CORPUS / "s12-smi/prompt-smi-525-8x-a100-sxm-80gb-cut-in-third-gpu_katepanter.txt"
    (part,) = parse_text(path.read_text(), str(path))
    g = part.rig.gpus[2]
    assert (g.power_draw_w, g.power_limit_w, g.memory_total_bytes) == (59.0, 400.0, None)


def test_an_invalid_bar_and_the_probe_it_fails_are_one_loss() -> None:
    # https://github.com/system76/firmware-open/issues/66: "BAR0 is 0M", then "probe of 0000:06:00.0 failed", twice
    rel = "s12-lost-gpu/dmesg-egpu-bar0-0m-probe-failed-none-initialized-repeating-cut_jamalex.txt"
    assert {k for k, _ in _events(rel)} == {"gpu-bar-invalid", "gpu-probe-failed"}
    assert _found(rel) == [("GA820", "fail", "GPU 0000:06:00.0")]
