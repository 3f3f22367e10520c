"""Xid 154 names the recovery action by its value (NVML's GPU recovery action: 0 none, 1 GPU reset, 2 node reboot,
3 drain P2P, 4 drain and reset) and by a name that drivers have printed differently ("0x2 (OS Reboot)" beside the
catalog's "Node Reboot Required"): the value decides the severity and the fix."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.catalog.xids import event_severity, recovery_kind
from gpuadvisor.importers import import_files
from gpuadvisor.rules import evaluate

CORPUS = Path(__file__).parent / "corpus"


def test_os_reboot_is_the_node_reboot_the_catalog_names() -> None:
    # https://github.com/amoghmunikote/cmpunlocker/pull/31 (set 33): Xid 31 twice, then Xid 154 '... from 0x0 (None)
    # to 0x2 (OS Reboot)' on 01:00, 02:00 and 71:00
    (path,) = (CORPUS / "s33-logs").glob("journal-xid31-ce-region-violation-then-xid154-os-reboot-3-gpus_*.txt")
    rig = import_files([path])
    found = [f for f in evaluate(rig) if f.code == "GA801" and f.observed.get("xid") == 154]
    assert sorted((f.subject, f.severity) for f in found) == [
        ("PCI 0000:01:00", "fail"),
        ("PCI 0000:02:00", "fail"),
        ("PCI 0000:71:00", "fail"),
    ]
    assert all("drain the node and reboot it" in f.fix for f in found)
    line = next(x for x in path.read_text().splitlines() if "154," in x)
    assert recovery_kind(line) == "node reboot required" and event_severity(154, line) == "fail"
