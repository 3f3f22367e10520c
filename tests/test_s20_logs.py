"""Held-out set 20's log misreads, as classes (files in tests/corpus/s20-logs and its siblings, gathered and read by
hand before the tool ran on them; each case names its source thread), each also checked on another public sample of
the same form (its URL beside it)."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.importers.sections import split_sections
from tests.corpus_cases import corpus_file as _one
from tests.corpus_cases import run_import

WORSE_THAN_INFO = ("warn", "fail")


def _scan(path: Path) -> dict:
    rc, scan = run_import([path])
    assert rc == 0 and scan is not None
    return scan


# --- Slurm's own lines: a job's failure (its program's), not a GPU's --------------------------------------------

# https://github.com/facebookresearch/habitat-lab/issues/298 (two tasks of a DDPPO job segfault under srun, as
# posted, its indent kept): srun's task-exit error ("%s: %s %s: %s%s" in Slurm's src/srun/launch.c: hosts, "task",
# the task numbers, strsignal's text, " (core dumped)") and its step-termination notice between them
SRUN_TWO_TASKS = """\
        srun: error: nid04277: task 1: Segmentation fault (core dumped)
        srun: Terminating job step 20370799.1
        srun: error: nid04276: task 0: Segmentation fault (core dumped)
"""


def test_srun_error_lines_are_a_jobs_log_with_no_gpu_fault(tmp_path: Path) -> None:
    # the corpus's one line (node cn125, task 0) and the other thread's two tasks on two nodes: read, all lines,
    # no event, no GPU, nothing worse than info
    pasted = tmp_path / "paste.txt"
    pasted.write_text(SRUN_TWO_TASKS, encoding="utf-8")
    assert [s.kind for s in split_sections(SRUN_TWO_TASKS)] == ["daemon-log"]
    for path, lines in ((_one("s20-logs/srun-error-cn125-task-0-*.txt"), 1), (pasted, 3)):
        scan = _scan(path)
        assert scan["kernel"]["lines_read"] == lines and scan["kernel"]["events"] == []
        assert scan["gpus"] == []
        assert not [f for f in scan["findings"] if f["severity"] in WORSE_THAN_INFO]


def test_a_line_naming_srun_in_prose_is_not_slurms_log() -> None:
    # a shell's "srun: command not found" is not Slurm's log line (no level after the name)
    assert [s.kind for s in split_sections("bash: srun: command not found\n")] != ["daemon-log"]
    assert [s.kind for s in split_sections("srun: command not found\n")] != ["daemon-log"]


# https://github.com/koesterlab/setup-slurm-action/issues/4 (slurmd's log on a CI runner, the one line quoted with
# its time) and https://github.com/Azure/cyclecloud-slurm/issues/412 (the same line quoted without it): slurm.conf's
# CPU layout against the hardware slurmd counted: Slurm's configuration, nothing about the GPUs
SLURMD_TIMED = (
    "[2023-11-09T22:49:00.525] error: Node configuration differs from hardware: CPUs=2:4(hw) Boards=1:1(hw) "
    "SocketsPerBoard=1:1(hw) CoresPerSocket=2:2(hw) ThreadsPerCore=1:2(hw)\n"
)
SLURMD_BARE = (
    "error: Node configuration differs from hardware: CPUs=4:8(hw) Boards=1:1(hw) SocketsPerBoard=2:1(hw) "
    "CoresPerSocket=1:4(hw) ThreadsPerCore=2:2(hw)\n"
)


def test_a_slurmd_log_is_read_as_a_log_with_no_gpu_fault(tmp_path: Path) -> None:
    # the corpus's slurmd 19.05 log (15 lines, its times taken off before the split) and the two one-line quotes
    scan = _scan(_one("s19-logs/slurmd-log-19-05-*.txt"))
    assert scan["kernel"]["lines_read"] == 15 and scan["kernel"]["events"] == [] and scan["gpus"] == []
    assert not [f for f in scan["findings"] if f["severity"] in WORSE_THAN_INFO]
    assert [s.kind for s in split_sections(SLURMD_BARE)] == ["daemon-log"]
    for text in (SLURMD_TIMED, SLURMD_BARE):
        # (one timed line alone is a log the kernel log's reader takes: the same reading, no event in it)
        assert [s.kind for s in split_sections(text)] in (["daemon-log"], ["kernel-log"])
        pasted = tmp_path / "paste.txt"
        pasted.write_text(text, encoding="utf-8")
        scan = _scan(pasted)
        assert scan["kernel"]["lines_read"] == 1 and scan["gpus"] == []
        assert not [f for f in scan["findings"] if f["severity"] in WORSE_THAN_INFO]


def test_a_bare_error_line_alone_is_not_a_slurmd_log() -> None:
    # a level word alone ("error: ...", as many tools print) opens slurmd's log only with one of slurmd's own lines
    assert [s.kind for s in split_sections("error: could not open file foo.bin\n")] != ["daemon-log"]


# --- scontrol show node: Slurm's verdict on the node, as another checker's ---------------------------------------

# https://github.com/SckyzO/slurm_exporter/issues/198 (Slurm 23.11.4: slurmctld downed a GPU node that stopped
# answering; scontrol show node gpu02 as posted, cut after its last whole line before the post's excerpt ends)
GPU02_DOWN = """\
scontrol show node gpu02
NodeName=gpu02 Arch=x86_64 CoresPerSocket=4
   CPUAlloc=0 CPUEfctv=16 CPUTot=16 CPULoad=0.00
   AvailableFeatures=(null)
   ActiveFeatures=(null)
   Gres=gpu:1080:7,gpu:block:1
   NodeAddr=gpu02 NodeHostName=gpu02 Version=23.11.4
   OS=Linux 6.8.0-31-generic #31-Ubuntu SMP PREEMPT_DYNAMIC Sat Apr 20 00:40:06 UTC 2024
   RealMemory=250000 AllocMem=0 FreeMem=38206 Sockets=2 Boards=1
   State=DOWN+NOT_RESPONDING ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A
   Partitions=ifn,dll
   BootTime=2025-10-24T11:23:24 SlurmdStartTime=2026-07-07T13:36:57
   LastBusyTime=2026-07-25T11:54:03 ResumeAfterTime=None
"""


def _slurm_verdicts(scan: dict) -> list[dict]:
    return [f for f in scan["findings"] if f["code"] == "GA827" and f["observed"]["tool"] == "Slurm"]


def test_scontrol_show_node_out_of_service_is_slurms_verdict_that_warns(tmp_path: Path) -> None:
    # the corpus's node: IDLE+DRAIN for "gres/gpu count reported lower than configured (0 < 1)" (slurmctld's words
    # in Slurm's gres.c when slurmd registers fewer GPUs than slurm.conf's Gres): a warning naming the state and the
    # reason, no GPU listed, no GPU finding
    scan = _scan(_one("s17-logs/scontrol-show-node-drain-gres-gpu-count-*.txt"))
    (found,) = _slurm_verdicts(scan)
    assert found["severity"] == "warn" and found["observed"]["check"] == "node yigou-dev-102-68"
    assert found["observed"]["detail"].startswith("State=IDLE+DRAIN; Reason=gres/gpu count reported lower than")
    assert "gres.conf" in found["fix"] and "state=resume" in found["fix"]
    assert scan["gpus"] == [] and not [f for f in scan["findings"] if f["severity"] == "fail"]
    # the other thread's node, down and not responding, no Reason line in the paste
    pasted = tmp_path / "paste.txt"
    pasted.write_text(GPU02_DOWN, encoding="utf-8")
    (found,) = _slurm_verdicts(_scan(pasted))
    assert found["severity"] == "warn" and found["observed"]["check"] == "node gpu02"
    assert found["observed"]["detail"] == "State=DOWN+NOT_RESPONDING"


def test_a_node_in_service_is_no_verdict(tmp_path: Path) -> None:
    # the same record with the node idle (its State only changed): Slurm says nothing against it
    pasted = tmp_path / "paste.txt"
    pasted.write_text(GPU02_DOWN.replace("State=DOWN+NOT_RESPONDING", "State=IDLE"), encoding="utf-8")
    assert _slurm_verdicts(_scan(pasted)) == []


# --- gpud's fabric-state reason as text -------------------------------------------------------------------------

# https://github.com/leptonai/gpud/pull/1108 (gpud on GB200: its JSON log line from the fabric-manager component,
# then its CLI's check line, as posted, cut before the table of the first GPU's fabric state)
GPUD_GB200 = """\
{"level":"warn","ts":"2025-10-16T10:34:29.644Z","caller":"fabric-manager/component.go:378","msg":"fabric state is \
not healthy","reason":"GPU GPU-1182579c-5a69-8e8e-cb7a-e6e0b65d47c7: state=Not Supported; GPU \
GPU-3aead50c-68f9-897a-7def-7237d4da8c99: state=Not Supported; GPU GPU-3e659ab6-390a-4c15-0f63-6ae3c22498ba: \
state=Not Supported; GPU GPU-41c82cdf-ed70-786a-bcfe-da15d3a49ed7: state=Not Supported"}
✔ NVIDIA-GB200 checked fabric state
"""


def _fabric(scan: dict) -> list[dict]:
    return [f for f in scan["findings"] if f["code"] == "GA809"]


def test_gpuds_fabric_state_reason_as_text_is_read_as_gpuds_json(tmp_path: Path) -> None:
    # the corpus's quoted reason (an H100 PCIe: two GPUs "Not Supported", gpud's own false alarm, fixed in that pull
    # request): each GPU's state read, no fabric finding on a card with no NVSwitch fabric
    scan = _scan(_one("s15-fabric/gpud-quoted-h100-pcie-fabric-state-not-supported-*.txt"))
    assert [g["state"] for g in scan["fabric"]["gpus"]] == ["not-supported", "not-supported"]
    assert scan["fabric"]["manager_state"] is None and _fabric(scan) == []
    # the corpus's CLI check line after gpud's JSON log line: the daemon active
    scan = _scan(_one("s16-fabric/gpud-fabric-manager-check-a100-active_gyuho.txt"))
    assert scan["fabric"]["manager_state"] == "active" and _fabric(scan) == []
    # the other pull request's GB200 lines: four GPUs by UUID from the log line's reason, nothing worse than info
    pasted = tmp_path / "paste.txt"
    pasted.write_text(GPUD_GB200, encoding="utf-8")
    assert [s.kind for s in split_sections(GPUD_GB200)] == ["gpud"]
    scan = _scan(pasted)
    assert [g["state"] for g in scan["fabric"]["gpus"]] == ["not-supported"] * 4
    assert "checked fabric state" in scan["fabric"]["manager_detail"]
    assert not [f for f in scan["findings"] if f["severity"] in WORSE_THAN_INFO]


# --- the IMEX daemon's own log ------------------------------------------------------------------------------------


def test_an_imex_log_ending_at_an_error_is_a_daemon_that_did_not_start() -> None:
    # https://github.com/kubernetes-sigs/dra-driver-nvidia-gpu/issues/289: IMEX 570.00's options, then "[ERROR] ...
    # No matching network interface found for any IP addresses in the node configurat" (cut): the domain is down
    # until nodes_config.cfg names this node: fail, a configuration fix, no hardware action, no GPU or NVLink code
    scan = _scan(_one("s20-fabric/kubectl-logs-imex-570-no-matching-network-interface-*.txt"))
    assert scan["fabric"]["imex_state"] == "failed" and "IMEX 570.00" in scan["fabric"]["imex_detail"]
    (found,) = [f for f in scan["findings"] if f["severity"] == "fail"]
    assert found["code"] == "GA809" and "No matching network interface" in found["observed"]["detail"]
    assert "nodes_config.cfg" in found["fix"] and "not the hardware" in found["fix"]
    assert "manager_state" in scan["fabric"]["unavailable"]  # it says nothing of the fabric manager


def test_an_imex_log_of_a_normal_start_is_read_as_started_without_a_finding() -> None:
    # https://github.com/kubernetes-sigs/dra-driver-nvidia-gpu/pull/1465 (another thread, IMEX 580.159.04): its log
    # file could not be opened, so it logs to stderr (two WARNINGs, by design in a pod), then its options and node
    # entries: a normal start, nothing worse than info
    scan = _scan(_one("s20-fabric/imex-580-startup-stderr-logging-node-config-hostnames-healthy-cut_shivamerla.txt"))
    assert scan["fabric"]["imex_state"] == "started" and scan["fabric"]["imex_detail"] == "IMEX 580.159.04 started"
    assert not [f for f in scan["findings"] if f["severity"] in WORSE_THAN_INFO]
