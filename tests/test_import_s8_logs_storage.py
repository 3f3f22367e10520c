"""Held-out set 8's classes of kernel logs and storage outputs, each with text written by hand from the tool's
documentation or the kernel's source (the real pastes of each class are in tests/corpus/s8-*): kernel lines with no
time, Talos's node-prefixed lines, Xid lines quoted in another tool's report, a non-fatal AER on a port with no GPU
named, Xid 32; fio reports with spaces in the job name or a small block, nvme list without /dev/, with the Generic
column, or repeated and cut in its header."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuadvisor.importers import import_files
from gpuadvisor.rules import evaluate


def _import(tmp_path: Path, text: str):
    f = tmp_path / "paste.txt"
    f.write_text(text)
    return import_files([f])


def _judged(tmp_path: Path, text: str, *codes: str):
    return sorted((f.code, f.severity, f.subject) for f in evaluate(_import(tmp_path, text)) if f.code in codes)


# Linux drivers/pci/pcie/err.c prints "<driver> <bdf>: AER: can't recover (no error_detected callback)" and the
# port's "AER: device recovery failed"; aer.c prints "PCIe Bus Error: severity=Uncorrected (Non-Fatal), ...".
_PORT_ONLY = """\
Mar 03 10:00:01 host kernel: pcieport 0000:00:07.0: AER: Uncorrected (Non-Fatal) error received: 0000:00:07.0
Mar 03 10:00:01 host kernel: pcieport 0000:00:07.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), \
type=Transaction Layer, (Receiver ID)
Mar 03 10:00:01 host kernel: pcieport 0000:00:07.0:    [21] ACSViol                (First)
Mar 03 10:00:01 host kernel: thunderbolt 0000:05:00.0: AER: can't recover (no error_detected callback)
Mar 03 10:00:01 host kernel: pcieport 0000:00:07.0: AER: device recovery failed
"""


def test_a_non_fatal_aer_on_a_port_with_no_gpu_named_warns_and_never_fails(tmp_path):
    assert _judged(tmp_path, _PORT_ONLY, "GA821") == [("GA821", "warn", "PCIe pcieport 0000:00:07.0")]


def test_a_non_fatal_aer_on_the_gpu_itself_still_fails(tmp_path):
    text = _PORT_ONLY.replace("pcieport 0000:00:07.0: PCIe", "nvidia 0000:3b:00.0: PCIe")
    assert ("GA821", "fail", "GPU 0000:3b:00.0") in _judged(tmp_path, text, "GA821")


_NO_TIME = """\
pcieport 0000:00:01.1: AER: Uncorrected (Non-Fatal) error received: 0000:41:00.0
nvidia 0000:41:00.0: AER: can't recover (no error_detected callback)
pcieport 0000:40:01.0: AER: device recovery failed
NVRM: Xid (PCI:0000:41:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.
"""


def test_kernel_lines_without_a_time_are_read_as_a_kernel_log(tmp_path):
    found = _judged(tmp_path, _NO_TIME, "GA801", "GA821")
    assert ("GA821", "fail", "GPU 0000:41:00.0") in found and ("GA801", "fail", "PCI 0000:41:00") in found


_FELL = "NVRM: Xid (PCI:0000:17:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."


@pytest.mark.parametrize(
    "text",
    [
        # talosctl dmesg: "<node address>: <facility>: <level>: [<RFC 3339 time>]: <message>"
        "10.5.0.3: kern:    info: [2026-01-05T08:00:00.100000000Z]: nvidia 0000:17:00.0: enabling device\n"
        f"10.5.0.3: kern: warning: [2026-01-05T09:12:44.512312300Z]: {_FELL}\n",
        # gpud's scan quotes each kernel line: '[XID found] (5 minutes ago) "NVRM: Xid (...): 79, ..."'
        f'⌛ scanning dmesg\n[XID found] (5 minutes ago) "{_FELL}"\n✘ scanned dmesg file -- found 1 issue(s)\n',
    ],
    ids=["talos-node-prefixed", "quoted-by-gpud"],
)
def test_kernel_lines_prefixed_by_a_node_or_quoted_by_another_tool_are_read(tmp_path, text):
    assert _judged(tmp_path, text, "GA801") == [("GA801", "fail", "PCI 0000:17:00")]


def test_xid_32_alone_warns_its_causes_not_being_the_applications(tmp_path):
    # NVIDIA's Xid listing: 32 "Invalid or corrupted push buffer stream" (driver, memory, bus, thermal, FB)
    text = "[ 812.000001] NVRM: Xid (PCI:0000:01:00): 32, Channel ID 00000000 intr 00004000\n"
    assert _judged(tmp_path, text, "GA801") == [("GA801", "warn", "PCI 0000:01:00")]


def _bench(tmp_path: Path, text: str):
    rig = _import(tmp_path, text)
    (path,) = rig.storage.paths
    b = path.bench
    return b.seq_read_gbps, b.block_bytes, b.iodepth


# fio's HOWTO, "Interpreting the output": the job line "name: (g=0): rw=..., bs=(R) ..." and " read: IOPS=..., BW=".
_FIO = """\
Seq Read Job: (g=0): rw=read, bs=(R) 1024KiB-1024KiB, (W) 1024KiB-1024KiB, (T) 1024KiB-1024KiB, ioengine=libaio, \
iodepth=32
...
fio-3.28
Starting 2 processes
Seq Read Job: (groupid=0, jobs=2): err= 0: pid=100: Mon Jan  5 10:00:00 2026
  read: IOPS=2000, BW=2000MiB/s (2097MB/s)(20.0GiB/10240msec)
"""


def test_a_fio_job_name_with_spaces_and_the_dots_line_is_read(tmp_path):
    assert _bench(tmp_path, _FIO) == (2.097, 1048576, 32)


def test_a_small_block_sequential_fio_read_is_kept_with_its_block_size(tmp_path):
    text = _FIO.replace("1024KiB-1024KiB", "4096B-4096B").replace("iodepth=32", "iodepth=1")
    assert _bench(tmp_path, "% fio job.fio\n" + text) == (2.097, 4096, 1)


def _nvme(tmp_path: Path, text: str):
    (path,) = _import(tmp_path, text).storage.paths
    return [(d.name, d.model, d.size_bytes) for d in path.devices]


# nvme-cli's "nvme list" (nvme-print.c): Node, [Generic,] SN, Model, Namespace, Usage, Format, FW Rev
_NVME = """\
Node                  SN                   Model                                    Namespace Usage                      Format           FW Rev
--------------------- -------------------- ---------------------------------------- --------- -------------------------- ---------------- --------
/dev/nvme0n1          S4EWNX0R123456       Samsung SSD 980 PRO 1TB                  1         100.00  GB /   1.00  TB    512   B +  0 B   5B2QGXA7
"""  # noqa: E501


def test_nvme_list_without_dev_in_its_node_column_is_read(tmp_path):
    text = _NVME.replace("/dev/nvme0n1    ", "nvme0n1         ")
    assert _nvme(tmp_path, text) == [("nvme0n1", "Samsung SSD 980 PRO 1TB", 10**12)]


def test_nvme_list_with_the_generic_column_keeps_the_serial_out_of_the_model(tmp_path):
    text = (
        "Node                  Generic               SN                   Model                                    "
        "Namespace  Usage                      Format           FW Rev\n"
        "--------------------- --------------------- -------------------- ---------------------------------------- "
        "---------- -------------------------- ---------------- --------\n"
        "/dev/nvme0n1          /dev/ng0n1            AB12               Samsung SSD 980 PRO 1TB                  "
        "0x1        100.00  GB /   1.00  TB    512   B +  0 B   5B2QGXA7\n"
    )
    assert _nvme(tmp_path, text) == [("nvme0n1", "Samsung SSD 980 PRO 1TB", 10**12)]


def test_nvme_list_repeated_and_cut_in_its_header_keeps_the_first_listing(tmp_path):
    head = "\n".join(_NVME.splitlines()[:2])
    text = "# nvme version\nnvme version 2.8\n# nvme list\n" + _NVME + "# nvme list\n" + head[:200]
    assert _nvme(tmp_path, text) == [("nvme0n1", "Samsung SSD 980 PRO 1TB", 10**12)]


def test_fio3_block_sizes_with_a_decimal_point_are_whole_bytes():
    """fio 3 prints a job's block size as "bs=(R) 64.0KiB-64.0KiB" (https://github.com/armbian/build/pull/6368)."""
    from gpuadvisor.importers.fio import parse_block

    assert [parse_block(x) for x in ("64.0KiB", "4096B", "1.5MiB", "0.5K", "4.1K")] == [65536, 4096, 1572864, 512, None]
