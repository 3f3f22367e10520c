"""Held-out set 25's classes of fabric manager, kernel, NCCL and RDMA logs, each from a real paste (the corpus file in
tests/corpus/s25-* and one more public sample of the same form, its source URL beside it)."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.importers import import_files
from tests.test_s21_logs import _judged

CORPUS = Path(__file__).parent / "corpus"

# https://docs.digitalocean.com/support/how-do-i-fix-a-system-not-initialized-error-on-multi-gpu-droplets/ (the
# "Align Fabric Manager and Driver Versions" section): /var/log/fabricmanager.log of an H100x8 Droplet whose fabric
# manager (535.230.02) is ahead of the loaded driver (535.216.01)
_DO_FM_LOG = (
    "[Apr 02 2025 15:45:55] [ERROR] [tid 11713] fabric manager NVIDIA GPU driver interface version 535.230.02 don't "
    "match with driver version 535.216.01. Please update with matching NVIDIA driver package.\n"
)


def test_a_fabric_manager_that_does_not_match_the_driver_fails_ga809_even_cut_before_the_drivers_version(tmp_path):
    """The fabric manager's version check logs 'fabric manager NVIDIA GPU driver interface version X don't match with
    driver version Y' and exits (NVIDIA Fabric Manager User Guide: the fabric manager and driver versions must match):
    the NVSwitch fabric is never set up. The line names the fabric manager's version first, so a paste cut before the
    driver's version (the corpus journal, cut at "don'") still shows the failed check."""
    aws = next((CORPUS / "s25-fabric").glob("ssh-journalctl-u-fabricmanager-*.txt")).read_text()
    cut = _DO_FM_LOG[: _DO_FM_LOG.index("don't") + 4]
    for text, fm in ((aws, "535.183.01"), (_DO_FM_LOG, "535.230.02"), (cut, "535.230.02")):
        found = _judged(tmp_path, text)
        fails = [f for f in found if f[1] == "fail"]
        assert [c for c, _, _ in fails] == ["GA809"], found
        f = tmp_path / "fm.txt"
        f.write_text(text)
        fab = import_files([f]).fabric
        assert fab.manager_state == "failed"
        assert fab.manager_detail and f"fabric manager {fm} does not match" in fab.manager_detail
    f = tmp_path / "fm.txt"
    f.write_text(_DO_FM_LOG)
    assert "driver 535.216.01" in (import_files([f]).fabric.manager_detail or "")
