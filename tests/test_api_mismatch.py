"""NVRM's API mismatch in a kernel log: the user-space driver is another version than the loaded kernel module, so no
GPU can be used until they match (GA507 fails, as for nvidia-smi's "Driver/library version mismatch"). The message
(open-gpu-kernel-modules, nv.c) spans lines, each behind the log's own prefix, in two wordings."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor import rules
from gpuadvisor.importers import import_texts

# https://github.com/NVIDIA/nvidia-docker/issues/182: journalctl, the message's lines under the first one's prefix
DOCKER_182 = """\
Aug 26 14:08:07 nyasara-linux kernel: NVRM: API mismatch: the client has the version 367.44, but
                                      NVRM: this kernel module has the version 367.35.  Please
                                      NVRM: make sure that this kernel module and all NVIDIA driver
                                      NVRM: components have the same version.
"""
# https://github.com/stackhpc/ansible-slurm-appliance/issues/287: rsyslog wrote the newlines as #012
SLURM_287 = (
    "Jun 30 11:07:05 gpu-0 kernel: NVRM: API mismatch: the client has the version 535.54.03, but#012NVRM: this kernel "
    "module has the version 530.30.02.  Please#012NVRM: make sure that this kernel module and all NVIDIA driver#012"
    "NVRM: components have the same version.\n"
)
# https://github.com/Frogging-Family/nvidia-all/issues/394: the 2025 wording, the client named
FROGGING_394 = """\
[    8.805842] r8169 0000:83:00.0: invalid VPD tag 0xff (size 0) at offset 0; assume missing optional EEPROM
[    9.424670] NVRM: API mismatch: the client 'kwin_wayland' (pid 1005)
               NVRM: has the version 595.84, but this kernel module has
               NVRM: the version 595.80.  Please make sure that this
               NVRM: kernel module and all NVIDIA driver components
               NVRM: have the same version.
"""
CORPUS = Path(__file__).parent / "corpus" / "s21-logs"


def _ga507(text: str) -> str:
    rig = import_texts([("paste.txt", text)])
    (f,) = [f for f in rules.evaluate(rig) if f.code == "GA507" and f.severity == "fail"]
    return f.message


def test_both_wordings_and_every_prefix_name_both_versions():
    assert "the loaded module is 367.35, a client has 367.44" in _ga507(DOCKER_182)
    assert "the loaded module is 530.30.02, a client has 535.54.03" in _ga507(SLURM_287)
    assert "the loaded module is 595.80, a client has 595.84" in _ga507(FROGGING_394)


def test_the_tail_alone_under_cloud_inits_prefix_still_fails():
    # the paste keeps only the message's second half, each line behind "[ t] cloud-init[3620]: "
    (f,) = CORPUS.glob("cloud-init-wrapped-nvrm-api-mismatch-*.txt")
    assert "the loaded module is 535.161.07)" in _ga507(f.read_text())


def test_a_log_without_the_message_keeps_the_driver_unjudged():
    rig = import_texts([("paste.txt", FROGGING_394.splitlines(keepends=True)[0])])
    assert not [f for f in rules.evaluate(rig) if f.code == "GA507" and f.severity == "fail"]
