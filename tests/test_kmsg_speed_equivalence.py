"""The kernel-log sign reader's anchored scan (probes/kmsg_signs.py ``sign_lines``: a str.find pass per anchor, not
per keyword) reads the same events as the reader before it, which read every line holding one of KEYWORDS.

The sign lines below are the forms the module's docstring cites: the NVIDIA driver's messages (RmInitAdapter as
posted in https://github.com/NVIDIA/gpu-operator/issues/1146, the GSP heartbeat in
https://github.com/ublue-os/bazzite/issues/4449), Linux drivers/pci/pcie/aer.c ("PCIe Bus Error: severity=%s"),
kernel/hung_task.c and kernel/watchdog.c, and the mlx5_core driver's (drivers/net/ethernet/mellanox/mlx5/core).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from gpuadvisor.probes import kmsg_signs
from gpuadvisor.probes.kmsg_signs import KEYWORDS, parse_signs, read_sign

TESTS = Path(__file__).parent

SIGNS = [
    # an oops cut above its header, its code address in the driver
    # (https://github.com/MrMEEE/bumblebee-Old-and-abbandoned/issues/160); first: no other oops's header above it
    (
        "driver-oops",
        "Pid: 6510, comm: Xorg Tainted: P            2.6.38-8-generic #42-Ubuntu Dell Inc. Inspiron N5110/0HVRTT\n"
        "RIP: 0010:[<ffffffffa037aaee>]  [<ffffffffa037aaee>] _nv003083rm+0x87/0xad [nvidia]",
    ),
    ("gpu-init-failed", "NVRM: GPU 0000:0a:00.0: RmInitAdapter failed! (0x24:0x72:1568)"),
    ("gpu-is-lost", "NVRM: nvAssertOkFailedNoLog: Assertion failed: GPU lost from the bus [NV_ERR_GPU_IS_LOST]"),
    ("gpu-reset-required", "NVRM: GPU 0000:0c:00.0: NV_ERR_RESET_REQUIRED"),
    ("gsp-timeout", "NVRM: _kgspIsHeartbeatTimedOut: Heartbeat timed out, ts 1234, now 5678"),
    ("gsp-timeout", "NVRM: GPU0 rpcSendMessage failed with status 0x0000000f for fn 76!"),
    ("gsp-timeout", "NVRM: GPU0 Timeout waiting for RPC from GSP! Expected function 76 (GSP_RM_CONTROL)."),
    ("aer-fatal", "pcieport 0000:00:03.0: AER: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer"),
    ("aer-nonfatal", "nvidia 0000:03:00.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction Layer"),
    ("aer-corrected", "pcieport 0000:00:01.0: AER: PCIe Bus Error: severity=Corrected, type=Physical Layer"),
    ("aer-unrecovered", "nvidia 0000:03:00.0: AER: can't recover (no error_detected callback)"),
    (
        "gpu-is-lost",
        "nvidia-modeset: ERROR: GPU:0: Failed to query display engine channel state: 0x0000c67e:6:0:0x0000000f",
    ),
    (
        "gpu-reset-required",
        "nvidia-modeset: ERROR: GPU:0: Failed to query display engine channel state: 0x0000ca7e:0:0:0x00000062",
    ),
    ("gsp-boot-failed", "NVRM: kgspInitRm_IMPL: cannot bootstrap GSP-RM"),
    ("gsp-boot-failed", "NVRM: RmInitAdapter: Cannot initialize GSP firmware RM"),
    ("gsp-boot-failed", "NVRM: _kgspBootGspRm: unexpected WPR2 already up, cannot proceed with booting GSP"),
    ("gsp-boot-failed", "NVRM: kgspWaitForGfwBootOk_TU102: failed to wait for GFW boot complete"),
    ("nvlink-discovery-failed", "NVRM: knvlinkDiscoverPostRxDetLinks_GH100: Getting peer0's postRxDetLinkMask failed!"),
    ("nvlink-discovery-failed", "NVRM: knvlinkUpdatePostRxDetectLinkMask_IMPL: Failed to update Rx Detect Link mask!"),
    (
        "driver-hung",
        "INFO: task nvc:[driver]:5403 blocked for more than 120 seconds.\n uvm_gpu_retain_by_uuid+0x1e/0x40"
        " [nvidia_uvm]",
    ),
    ("driver-hung", "watchdog: BUG: soft lockup - CPU#12 stuck for 22s! [nvidia-smi:4242]"),
    ("gpu-probe-failed", "nvidia: probe of 0000:01:00.0 failed with error -1"),
    ("gpu-probe-failed", "nvidia 0000:02:00.0: probe with driver nvidia failed with error -1"),
    ("gpu-probe-failed", "NVRM: The NVIDIA probe routine failed for 1 device(s)."),
    ("gpu-not-probed", "NVRM: The NVIDIA probe routine was not called for 3 device(s)."),
    (
        "gpu-bar-invalid",
        "NVRM: This PCI I/O region assigned to your NVIDIA device is invalid:\nNVRM: BAR1 is 0M @ 0x0"
        " (PCI:0000:08:00.0)",
    ),
    (
        "gpu-unsupported",
        "NVRM: The NVIDIA GPU 0000:af:00.0 (PCI ID: 10de:1db5)\nNVRM: installed in this system is not"
        " supported by the\nNVRM: NVIDIA 535.54.03 driver release.",
    ),
    ("hca-fatal", "mlx5_core 0000:61:00.0: poll_health:819:(pid 0): device's health compromised - reached miss count"),
    ("hca-fatal", "mlx5_core 0000:61:00.0: mlx5_enter_error_state:226:(pid 9): start"),
    (
        "hca-cmd-timeout",
        "mlx5_core 0000:61:00.0: wait_func_handle_exec_timeout:1100:(pid 5): cmd[22]: CREATE_DCT(0x710)"
        " No done completion",
    ),
    (
        "hca-cmd-timeout",
        "mlx5_core 0000:61:00.0: cmd_work_handler:877:(pid 5): timeout. Will cause a leak of a command resource",
    ),
    ("hca-load-failed", "mlx5_core 0000:03:00.0: mlx5_load_one failed with error code -22"),
    (
        "hca-slot-power",
        "mlx5_core 0000:5c:00.0: mlx5_pcie_event:301:(pid 5): Detected insufficient power on the PCIe slot (27W).",
    ),
    ("gpu-unreadable", "nouveau 0000:01:00.0: unknown chipset (ffffffff)"),
    (
        "driver-oops",
        "BUG: unable to handle kernel NULL pointer dereference at 0000000000000340\nIP: [<ffffffffc075549f>]"
        " _nv011745rm+0x1f/0x170 [nvidia]",
    ),
    (
        "driver-oops",
        "BUG: kernel NULL pointer dereference, address: 0000000000000008\nRIP: 0010:nvidia_vma_access+0x1b"
        "/0x350 [nvidia]",
    ),
    # newer kernels' oops wording (https://github.com/ich777/unraid-nvidia-driver/issues/3), cut before its RIP
    (
        "driver-oops",
        "BUG: unable to handle page fault for address: ffffc90011110200\nOops: 0002 [#1] PREEMPT SMP NOPTI\nCPU: 5 "
        "PID: 9577 Comm: nvidia-smi Tainted: P           O      5.19.17-Unraid #2",
    ),
    ("link-down", "mlx5_core 0000:17:00.0 ibp23s0: Link down"),
    ("link-up", "mlx5_core 0000:17:00.0 ibp23s0: Link up"),
    ("link-down", "ib0: Lost carrier"),
    # the driver's install problems (forms as rules/kernel_signs.py cites them) and a GPU BAR left unassigned
    (
        "driver-install",
        "nvidia 0000:01:00.0: Direct firmware load for nvidia/535.54.03/gsp_ga10x.bin failed with error -2",
    ),
    ("driver-install", "NVRM: No firmware image found"),
    (
        "driver-install",
        "nvidia: version magic '5.4.0-42-generic SMP mod_unload' should be '5.15.0-91-generic SMP mod_unload'",
    ),
    ("driver-install", "nvidia: Unknown symbol drm_gem_object_free (err -2)"),
    # a GPU that did not come back from D3cold (https://github.com/system76/firmware-open/issues/259)
    ("gpu-d3cold", "nvidia 0000:01:00.0: can't change power state from D3cold to D0 (config space inaccessible)"),
    # a kernel panic in the adapter's driver (https://github.com/siderolabs/talos/issues/8624)
    (
        "hca-driver-panic",
        "RIP: 0010:esw_port_metadata_get+0x19/0x30 [mlx5_core]\nKernel panic - not syncing: Fatal exception",
    ),
    # the GPUDirect RDMA peer-memory module failing to load (https://github.com/NVIDIA/gpu-operator/issues/2868)
    ("peermem-load-failed", "nvidia_peermem: Unknown symbol ib_register_peer_memory_client (err -22)"),
    (
        "gpu-bar-unassigned",
        "pci 0000:01:00.0: [10de:2204] type 00 class 0x030000 PCIe Legacy Endpoint\npci 0000:01:00.0: BAR 1 [mem size"
        " 0x10000000 64bit pref]: can't assign; no space",
    ),
]
NOISE = [
    "EXT4-fs (md127p3): re-mounted. Quota mode: none.",
    "Buffer I/O error on dev sdb, logical block 0, async page read",  # a 'B' that is no sign
    "usb 1-1: can't set config #1, error -32",  # an apostrophe and a '#' that are no sign
    "nvidia-nvswitch2: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)",
    "NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
    "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.54.03",  # the driver's line, no sign
    "e1000e 0000:00:1f.6 eno1: NIC Link is Up 1000 Mbps Full Duplex",  # a link line that is not mlx5's
    "systemd[1]: Failed to start Load Kernel Modules.",  # "Failed" that is no sign's
]


def old_reader(text: str) -> list[tuple[str, str | None, str, int]]:
    """The events of the reader before the anchored scan: every line holding one of KEYWORDS, read in order."""
    out = []
    start = 0
    for number, line in enumerate(text.split("\n"), 1):
        end = start + len(line)
        if any(word in line for word in KEYWORDS):
            got = read_sign(line, text, end if end < len(text) else -1)
            if got is not None:
                out.append((got[0], got[1], got[2][:300], number))
        start = end + 1
    return out


def new_reader(text: str) -> list[tuple[str, str | None, str, int]]:
    return [(e.kind, e.bus_id, e.text or "", e.line or 0) for e in parse_signs(text, 1, lambda _p, _e: None)]


def generated_log(rounds: int = 3) -> str:
    lines = []
    for r in range(rounds):
        for i, (_, sign) in enumerate(SIGNS):
            lines.append(f"[{r * 100 + i:8d}.000000] {NOISE[(r + i) % len(NOISE)]}")
            lines.extend(f"[{r * 100 + i:8d}.{k:06d}] {part}" for k, part in enumerate(sign.split("\n"), 1))
    return "\n".join(lines)  # the last line without its newline


def test_generated_log_reads_every_sign_the_same():
    text = generated_log()
    got = new_reader(text)
    assert got == old_reader(text)
    assert {kind for kind, *_ in got} == {kind for kind, _ in SIGNS}  # every sign is read, none lost
    assert [kind for kind, *_ in got[: len(SIGNS)]] == [kind for kind, _ in SIGNS]


def test_a_log_where_the_rare_characters_are_common_reads_the_same(monkeypatch: pytest.MonkeyPatch):
    """Past RARE_LINES lines holding a rare character, its anchors are searched as words from there on."""
    text = generated_log(6)
    want = old_reader(text)
    for most in (0, 3, 20):
        monkeypatch.setattr(kmsg_signs, "RARE_LINES", most)
        monkeypatch.setattr(kmsg_signs, "RARE_PER", 10**12)
        assert new_reader(text) == want, most


def test_every_fixture_and_corpus_file_reads_the_same():
    checked, differ = 0, []
    for path in sorted((*TESTS.glob("corpus/**/*"), *TESTS.glob("fixtures/**/*"))):
        if not path.is_file() or path.stat().st_size > 4 * 2**20:
            continue
        text = path.read_bytes().decode("utf-8", "replace")
        if not any(word in text for word in KEYWORDS):
            continue
        checked += 1
        if new_reader(text) != old_reader(text):
            differ.append(str(path.relative_to(TESTS)))
    assert checked > 50  # the kernel logs, lost-GPU pastes and bundles that hold a sign's keyword
    assert differ == []


def test_each_line_is_read_once_and_a_huge_line_stays_linear():
    line = "B' #" * 50_000 + " PCIe Bus Error: severity=Corrected"
    assert [(s, e) for s, e in kmsg_signs.sign_lines(line + "\nnext")] == [(0, len(line))]
