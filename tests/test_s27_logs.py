"""Held-out set 27's (and 26's) classes of kernel and node logs, each from a real paste (the corpus file in
tests/corpus/s26-*/s27-* and one more public sample of the same form, its source URL beside it)."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.importers import import_files
from gpuadvisor.importers.section import clean_lines
from gpuadvisor.rules import evaluate
from tests.test_s21_logs import _judged

CORPUS = Path(__file__).parent / "corpus"

# https://github.com/pop-os/cosmic-epoch/issues/3411: a Pop!_OS dmesg with the open module refusing a Turing-less GPU
# (10de:1d16) at 0000:2c:00.0; its probe line here as dmesg --notime prints it (the time column cut)
_POP_PROBE = "nvidia 0000:2c:00.0: probe with driver nvidia failed with error -1\n"


def test_a_lone_kernel_line_without_a_timestamp_is_still_a_kernel_line(tmp_path):
    """The kernel's dev_printk line of a PCI device ('nvidia 0000:01:00.0: probe with driver nvidia failed with error
    -1') quoted alone, with no time: the driver did not take the GPU (it is unusable on this boot), so GA820 fails on
    that bus; no Xid, so GA801 is silent."""
    lone = (CORPUS / "s27-lost-gpu" / "probe-with-driver-nvidia-failed-error-1-01-00-0-alone_bewstle.txt").read_text()
    for text, bus in ((lone, "01:00.0"), (_POP_PROBE, "2c:00.0")):
        found = [f for f in _judged(tmp_path, text) if f[1] != "not-checked"]
        fails = [f for f in found if f[1] == "fail"]
        assert [c for c, _, _ in fails] == ["GA820"], found
        assert bus in fails[0][2], found
        assert not [f for f in found if f[0] == "GA801"], found


# https://github.com/GoogleCloudPlatform/container-engine-accelerators/pull/497 (step 5): the same node condition in
# kubectl get node -o yaml, after the Xid (31, added to the monitored list for the test) stopped firing
_GKE_CONDITION_YAML = """\
  - lastHeartbeatTime: "2025-06-23T18:58:44Z"
    lastTransitionTime: "2025-06-23T18:44:57Z"
    message: 6e43a052-e544-467b-a972-63d7cd2ce80a
    reason: '{"31":true}'
    status: "True"
    type: XidCriticalError
"""


def test_gke_xid_critical_error_condition_is_the_xid_it_relays_judged_by_the_catalog(tmp_path):
    """GKE's device plugin (pkg/gpu/nvidia/health_check) sets the node condition XidCriticalError, its reason a JSON
    map of the Xids NVML reported: each is the driver's Xid, judged as a kernel log's is. Xid 31 (an MMU fault, the
    catalog's RESTART_APP) is the application's: GA801 at most a warning, no GPU lost, no PCIe fault."""
    row = CORPUS / "s27-logs" / "kubectl-describe-node-gke-xidcriticalerror-condition-xid31-test_sgysherry.txt"
    for text in (row.read_text(), _GKE_CONDITION_YAML):
        found = [f for f in _judged(tmp_path, text) if f[1] != "not-checked"]
        assert [c for c, _, _ in found] == ["GA801"], found
        assert found[0][1] in ("info", "warn"), found
        f = tmp_path / "node.txt"
        f.write_text(text)
        assert [(e.kind, e.code) for e in import_files([f]).kernel.events or []] == [("xid", 31)]


# https://github.com/MatPoliquin/videogames-ai-website (_pages/ubuntu/dmesg-aer-error.md): an X99 board's AER lines
# retyped into a blog post, the same 'serverity' slip, no device before them
_BLOG_AER = (
    "AER: Multiple Uncorrected (Non-Fatal) error received\n"
    "PCIe Bus Error: serverity=Uncorrected (Non-Fatal), type=Transaction Layer, (Requester ID)\n"
)


def test_a_retyped_aer_line_is_read_with_its_typos_where_they_are_unambiguous(tmp_path):
    """A PCIe AER line retyped by hand ('serverity=', a colon for the function's dot in '0000:00:1c:0', unambiguous
    with the domain) is the kernel's AER line: a corrected error on the chipset's root port is at most a warning (no
    GPU named, nothing lost: GA801, GA315 and GA820 silent); the blog's non-fatal one, its device not named, is a
    warning on an unnamed device, never a GPU's failure."""
    typed = next((CORPUS / "s27-logs").glob("typed-pcieport-*.txt")).read_text()
    found = [f for f in _judged(tmp_path, typed) if f[1] != "not-checked"]
    assert [(c, s) for c, s, _ in found] in ([("GA821", "info")], [("GA821", "warn")]), found
    assert "0000:00:1c.0" in found[0][2], found
    found = [f for f in _judged(tmp_path, _BLOG_AER) if f[1] != "not-checked"]
    assert [(c, s) for c, s, _ in found] == [("GA821", "warn")], found
    assert "GPU" not in found[0][2], found


def test_a_q_fragment_cut_above_its_gpu_header_keeps_that_gpus_fabric_state(tmp_path):
    """nvidia-smi -q pasted from inside a GPU's record (its 'GPU 0000:..' line cut off) is that GPU, counted first and
    of unknown bus; its Fabric block is that GPU's: State 'In Progress' (the fabric manager has not registered it
    with the NVLink fabric; CUDA cannot start until it completes, NVIDIA Fabric Manager User Guide) fails GA809 on
    GPU 0, not on the next record's H800."""
    frag = next((CORPUS / "s27-smi-q").glob("smi-q-fragment-clocks-fabric-in-progress-*.txt")).read_text()
    found = [f for f in _judged(tmp_path, frag) if f[1] == "fail"]
    assert [(c, s) for c, _, s in found] == [("GA809", "GPU 0")], found
    f = tmp_path / "q.txt"
    f.write_text(frag)
    fab = import_files([f]).fabric.gpus or []
    assert [(g.gpu_index, g.state) for g in fab] == [(0, "in-progress")]


# https://github.com/NVIDIA/open-gpu-kernel-modules/issues/1045 (a reply, RTX 5080): the journal of the same query
# failing with status 0x00000062 before the desktop locked up (Xid 119, 154 in the thread)
_RTX5080_MODESET = (
    "Jun 12 16:30:32 fedora-box kernel: nvidia-modeset: ERROR: GPU:0: Failed to query display engine channel state: "
    "0x0000ca7e:2:0:0x00000062\n"
    "Jun 12 16:30:32 fedora-box kernel: nvidia-modeset: ERROR: GPU:0: Failed to query display engine channel state: "
    "0x0000ca7e:4:0:0x00000062\n"
    "Jun 12 16:30:35 fedora-box kernel: nvidia-modeset: WARNING: GPU:0: Lost display notification (0:0x00000000); "
    "continuing.\n"
)


def test_a_failed_display_channel_query_with_a_lost_gpus_status_is_a_lost_gpu(tmp_path):
    """nvidia-modeset logs 'Failed to query display engine channel state: class:instance:subdevice:status' with the
    resource manager's status (open-gpu-kernel-modules, nvkms-evo1.c GetChannelState; nvstatuscodes.h):
    0x00000062 NV_ERR_RESET_REQUIRED (0x0000000f NV_ERR_GPU_IS_LOST): the GPU no longer answers, GA820 fails (no Xid:
    GA801 silent); quoted without time (indented in the PR) or in a journal."""
    pr = next((CORPUS / "s26-logs").glob("pr-quoted-nvidia-drm-unload-modeset-*.txt")).read_text()
    for text in (pr, _RTX5080_MODESET):
        found = [f for f in _judged(tmp_path, text) if f[1] == "fail"]
        assert [c for c, _, _ in found] == ["GA820"], found
        f = tmp_path / "log.txt"
        f.write_text(text)
        assert not [c for c, _, _ in _judged(tmp_path, text) if c == "GA801"]
        said = [x.message for x in evaluate(import_files([f])) if x.code == "GA820"]
        assert "needs a reset" in said[0], said


def test_an_oops_in_an_nvidia_daemons_task_in_a_copy_helper_read_through_literal_crlf(tmp_path):
    """A GKE node's serial console copied from the API, each line ending in a literal backslash-r-backslash-n: read
    without them. Its oops ('BUG: unable to handle page fault', 'Comm: dcgm-exporter', RIP memcpy_erms, the call
    trace cut) happened in a kernel copy helper while DCGM's exporter queried the driver (the task is NVIDIA's, the
    caller not shown): the driver crashed, GA820 fails (reboot, no Xid: GA801 silent, no GPU lost by bus: no GA315)."""
    console = next((CORPUS / "s26-logs").glob("gke-console-oops-memcpy-erms-dcgm-exporter-*.txt")).read_text()
    lines = [x for x in clean_lines(console) if x.strip() and not x.startswith("```")]
    assert not any(x.endswith("\\r\\n") for x in lines), lines[:3]
    assert lines[0].endswith("ffffa5c885148a00"), lines[0]
    found = [f for f in _judged(tmp_path, console) if f[1] != "not-checked"]
    assert [(c, s) for c, s, _ in found if s == "fail"] == [("GA820", "fail")], found
    assert not [c for c, _, _ in found if c in ("GA801", "GA315")], found
    f = tmp_path / "console.txt"
    f.write_text(console)
    said = [x.message for x in evaluate(import_files([f])) if x.code == "GA820"]
    assert "dcgm-exporter" in said[0] and "memcpy_erms" in said[0], said
