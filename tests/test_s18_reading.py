"""Held-out set 18's misreads in pastes, as classes (files in tests/corpus/s18-*, gathered and read by hand before the
tool ran on them; each case names its source thread), each also checked on another public sample of its format."""

from __future__ import annotations

from gpuadvisor.importers.merge import import_files, parse_text
from tests.corpus_cases import corpus_file as _one
from tests.corpus_cases import warn_findings as _found


def test_a_lost_gpu_line_with_its_index_before_the_bus_id_is_the_gpu_at_that_bus() -> None:
    # https://github.com/microsoft/WSL/issues/13027: WSL2's nvidia-smi, "for GPU0: 0000:C1:00.0: Unknown Error"
    path = _one("s18-smi/smi-wsl2-unable-device-handle-*.txt")
    rig = import_files([path])
    assert [g.bus_id for g in rig.gpus] == ["0000:c1:00.0", "0000:e1:00.0"]
    assert ("GA315", "fail") in {(code, sev) for code, sev, _subject in _found(path)}
    # https://github.com/cihlab/fics-cluster-guide/issues/53 (its title): the older form, the domain glued to "GPU";
    # its leading zeros are the bus's domain, not an index
    (part,) = parse_text("Unable to determine the device handle for GPU0000:20:00.0: Unknown Error\n", "smi")
    assert [g.bus_id for g in part.rig.gpus] == ["0000:20:00.0"]
    (part,) = parse_text("Unable to determine the device handle for GPU12: 0000:B1:00.0: Unknown Error\n", "smi")
    assert [g.bus_id for g in part.rig.gpus] == ["0000:b1:00.0"]


# https://github.com/pytorch/pytorch/issues/130181 (BioGeek): torch's collect_env on one A100 with two MIG devices,
# the MIG lines here not indented
_PYTORCH_130181 = """\
Collecting environment information...
PyTorch version: 2.5.0.dev20240705+cu121
Is debug build: False
CUDA used to build PyTorch: 12.1
GPU models and configuration:
GPU 0: NVIDIA A100-SXM4-80GB
MIG 3g.40gb Device 0:
MIG 3g.40gb Device 1:
Nvidia driver version: 535.161.08
"""


def test_mig_device_lines_under_a_gpu_in_collect_env_are_mig_mode_not_gpus() -> None:
    (part,) = parse_text(_PYTORCH_130181, "collect_env")
    assert [(g.index, g.name, g.mig_mode) for g in part.rig.gpus] == [(0, "NVIDIA A100-SXM4-80GB", True)]
    assert part.rig.software.driver_version == "535.161.08"
    # https://github.com/vllm-project/vllm/issues/12092: four indented MIG devices under GPU 0 of three A100s
    path = _one("s18-collect-env/vllm-collect-env-3x-a100-*.txt")
    rig = import_files([path])
    assert [(g.index, g.mig_mode) for g in rig.gpus] == [(0, True), (1, None), (2, None)]
    assert "GA314" in {code for code, _sev, _subject in _found(path)}


def test_a_topo_header_whose_last_column_is_the_short_numa_is_read_as_numa_affinity() -> None:
    # https://kubernetes.recipes/recipes/ai/dgx-h100-nvidia-smi-topo-kubernetes/: "CPU Affinity  NUMA", no GPU NUMA ID
    rig = import_files([_one("s18-topo/topo-m-blog-dgx-h100-*.txt")])
    assert [(g.cpu_affinity, g.numa_node) for g in rig.gpus] == [("0-51", 0)] * 4 + [("52-103", 1)] * 4
    # the same short header after NIC columns (the form teaching pages print for GPU-NIC placement): a NIC named
    # NUMA is not a column of its own, and NIC rows have no affinity cells
    text = (
        "        GPU0    GPU1    NIC0    CPU Affinity  NUMA\n"
        "GPU0     X      SYS     PXB     0-47          0\n"
        "GPU1    SYS      X      SYS     48-95         1\n"
        "NIC0    PXB     SYS      X\n"
    )
    (part,) = parse_text(text, "topo")
    assert [(g.cpu_affinity, g.numa_node) for g in part.rig.gpus] == [("0-47", 0), ("48-95", 1)]


# https://github.com/LeStefduSud/myscripts/blob/HEAD/mining/nvidia-commands.sh: a 535-era dmon (GPU and memory
# temperature apart, 'gtemp' and 'mtemp'; '-' where the GPU does not report one), three GeForce cards (its lines'
# trailing spaces trimmed)
_MYSCRIPTS_DMON = """\
# gpu    pwr  gtemp  mtemp     sm    mem    enc    dec    jpg    ofa   mclk   pclk
# Idx      W      C      C      %      %      %      %      %      %    MHz    MHz
    0    119     59      -    100      0      0      0      0      0   6800   1665
    1    159     59      -    100      0      0      0      0      0   9251   1695
    2    219     74      -    100      0      0      0      0      0   9251   1695
"""


def test_nvidia_smi_dmon_is_read_gpu_by_gpu_with_power_and_temperature() -> None:
    (part,) = parse_text(_MYSCRIPTS_DMON, "dmon")
    assert part.kind == "smi-dmon"
    got = [(g.index, g.power_draw_w, g.temperature_c, g.name, g.power_limit_w) for g in part.rig.gpus]
    assert got == [(0, 119.0, 59.0, None, None), (1, 159.0, 59.0, None, None), (2, 219.0, 74.0, None, None)]
    assert part.rig.gpus[0].memory_used_bytes is None  # no fb column shown
    # https://github.com/mozilla/DeepSpeech/issues/178: the older 'temp' column, quoted, its '#' escaped ('\\#')
    path = _one("s18-smi/smi-dmon-markdown-quoted-*.txt")
    rig = import_files([path])
    assert [(g.index, g.power_draw_w, g.temperature_c) for g in rig.gpus] == [
        (0, 111.0, 83.0),
        (1, 111.0, 84.0),
        (2, 112.0, 80.0),
        (3, 86.0, 70.0),
    ]
    assert rig.gpus[0].memory_used_bytes == 11651 * 2**20


# https://github.com/KrispyCamel4u/SysMonTask/issues/60 (Saim20): the head of a 460-era nvidia-smi -q -x, cut in
# its GPU record
_SYSMONTASK_60 = """\
<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v11.dtd">
<nvidia_smi_log>
\t<timestamp>Thu May  6 17:28:35 2021</timestamp>
\t<driver_version>460.67</driver_version>
\t<cuda_version>11.2</cuda_version>
\t<attached_gpus>1</attached_gpus>
\t<gpu id="00000000:01:00.0">
\t\t<product_name>GeForce GT 730</product_name>
\t\t<product_brand>GeForce</product_brand>
\t\t<persistence_mode>Disabled</persistence_mode>
"""


def _as_a_rich_text_editor_pastes_it(text: str) -> str:
    """'>' and '<' as entities, every indent a run of '&nbsp; ' (as the 1Panel thread's paste shows)."""
    out = []
    for line in text.splitlines():
        body = line.lstrip("\t")
        indent = "&nbsp; " * 4 * (len(line) - len(body))
        out.append(indent + body.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;"))
    return "\n".join(out) + "\n"


def test_an_html_escaped_smi_xml_is_decoded_then_read_as_smi_xml() -> None:
    (raw,) = parse_text(_SYSMONTASK_60, "x")
    (escaped,) = parse_text(_as_a_rich_text_editor_pastes_it(_SYSMONTASK_60), "x")
    assert raw.kind == escaped.kind == "smi-xml"
    for part in (raw, escaped):
        assert [(g.name, g.bus_id) for g in part.rig.gpus] == [("GeForce GT 730", "0000:01:00.0")]
        assert part.rig.software.driver_version == "460.67"
    # https://github.com/1Panel-dev/1Panel/issues/11910: a fragment with only '>' escaped, no GPU identity: read,
    # nothing to judge (it was refused)
    path = _one("s18-smi-q/smi-q-x-html-escaped-*.txt")
    assert import_files([path]).gpus == []
    # one line in three that merely holds an entity is left as it is: the paste was not escaped
    names = ["T&amp;0", "T1", "T2"]
    listed = "".join(f"GPU {i}: {n} (UUID: GPU-41255406-c9af-f94b-4ebf-9d57ad1853d{i})\n" for i, n in enumerate(names))
    assert [g.name for g in parse_text(listed, "x")[0].rig.gpus] == names


# https://github.com/balena-io-modules/drivelist/issues/306 (ninox92): util-linux 2.27's lsblk --pairs --all, its
# MAJ:MIN key as the column is named; cut after the loop devices
_DRIVELIST_306 = """\
$ lsblk --pairs --all
NAME="sda" MAJ:MIN="8:0" RM="0" SIZE="931.5G" RO="0" TYPE="disk" MOUNTPOINT=""
NAME="sda1" MAJ:MIN="8:1" RM="0" SIZE="1K" RO="0" TYPE="part" MOUNTPOINT=""
NAME="sda2" MAJ:MIN="8:2" RM="0" SIZE="488.3G" RO="0" TYPE="part" MOUNTPOINT=""
NAME="sdb" MAJ:MIN="8:16" RM="1" SIZE="" RO="0" TYPE="disk" MOUNTPOINT=""
NAME="sdd" MAJ:MIN="8:48" RM="1" SIZE="7.4G" RO="0" TYPE="disk" MOUNTPOINT=""
NAME="sdd1" MAJ:MIN="8:49" RM="1" SIZE="7.4G" RO="0" TYPE="part" MOUNTPOINT="/media/<username>/85CA-6700"
NAME="sr0" MAJ:MIN="11:0" RM="1" SIZE="1024M" RO="0" TYPE="rom" MOUNTPOINT=""
NAME="loop0" MAJ:MIN="7:0" RM="0" SIZE="" RO="0" TYPE="loop" MOUNTPOINT=""
"""


def test_lsblk_pairs_are_read_as_lsblk_whole_disks_only() -> None:
    (part,) = parse_text(_DRIVELIST_306, "lsblk")
    assert part.kind == "lsblk"
    devs = part.rig.storage.paths[0].devices
    assert [(d.name, d.size_bytes) for d in devs] == [
        ("sda", int(931.5 * 2**30)),
        ("sdb", None),
        ("sdd", int(7.4 * 2**30)),
    ]
    # https://github.com/canonical/checkbox/issues/120: -i -n -P -o KNAME,TYPE,MOUNTPOINT, no sizes: the disks by
    # their kernel names, the loop devices and partitions not disks
    rig = import_files([_one("s18-storage/lsblk-i-n-P-*.txt")])
    names = [d.name for d in rig.storage.paths[0].devices]
    assert names == ["sda", "sdb", "sdc", "nvme0n1", "nvme1n1", "nvme2n1", "nvme3n1", "pmem1s", "pmem0"]


# https://wiki.archlinux.org/title/InfiniBand ("iblinkinfo - View link information"): two ConnectX adapters cabled
# to each other, no switch
_ARCHWIKI_IBLINKINFO = """\
CA: MT25408 ConnectX Mellanox Technologies:
      0x0002c90300002779      4    1[  ] ==( 4X           5.0 Gbps Active/  LinkUp)==>       3    1[  ] "kvm mlx4_0" ( )
CA: hostname mlx4_0:
      0x0002c90300002f79      3    1[  ] ==( 4X           5.0 Gbps Active/  LinkUp)==>       4    1[  ] "MT25408 ConnectX Mellanox Technologies" ( )
"""  # noqa: E501


def test_iblinkinfo_is_recognised_and_its_host_ports_noted_not_taken_as_this_hosts() -> None:
    (part,) = parse_text(_ARCHWIKI_IBLINKINFO, "iblinkinfo")
    assert part.kind == "iblinkinfo"
    assert part.rig.network.rdma_ports in (None, [])
    (note,) = part.rig.problems
    assert "2 host port(s), 0 switch(es)" in note
    assert "'hostname mlx4_0' port 1: 4X 5.0 Gbps Active/LinkUp" in note
    # a port with no link, as iblinkinfo.c prints it ("==(  Down/ Polling)==>"): named apart
    down = _ARCHWIKI_IBLINKINFO.replace("4X           5.0 Gbps Active/  LinkUp", "               Down/ Polling", 1)
    (part,) = parse_text(down, "iblinkinfo")
    assert part.rig.problems[1].endswith("'MT25408 ConnectX Mellanox Technologies' port 1: Down/Polling")
    # https://github.com/NVIDIA/nccl-tests/issues/71: four V100 hosts and a SHARP node on one switch, rows elided,
    # the last line cut: read, nothing judged
    rig = import_files([_one("s18-rdma/iblinkinfo-*.txt")])
    assert rig.gpus == [] and any("4 host port(s), 1 switch(es)" in p for p in rig.problems)


def test_a_reset_recovery_action_and_dcgms_last_xid_are_events_of_their_gpus() -> None:
    # https://github.com/NVIDIA/DCGM/issues/263: --query-gpu=index,gpu_recovery_action (noheader) with the poster's
    # note typed after GPU 1's 'Reset' (a comma in it), then dcgmi dmon -e 230 (XIDER: the last Xid) with 120 on GPU 1
    path = _one("s18-dcgm/query-gpu-recovery-action-*.txt")
    rig = import_files([path])
    assert [g.index for g in rig.gpus] == list(range(8))
    events = rig.kernel.events or []
    assert sorted((e.kind, e.code, e.gpu_index) for e in events) == [("gpu-reset-required", 0, 1), ("xid", 120, 1)]
    found = {(code, sev, subject) for code, sev, subject in _found(path)}
    assert ("GA801", "fail", "GPU 1") in found and ("GA820", "fail", "GPU 1") in found
    # the other actions nvidia-smi --help-query-gpu lists: 'Drain and Reset' resets the GPU too; 'Reboot' is noted
    csv = "index, gpu_recovery_action\n0, Drain and Reset\n1, Reboot\n2, None\n"
    (part,) = parse_text(csv, "csv")
    assert [(e.kind, e.gpu_index) for e in part.rig.kernel.events or []] == [("gpu-reset-required", 0)]
    assert any("GPU 1: recovery action 'Reboot'" in p for p in part.rig.problems)
    # DCGM 4's dcgmi dmon prints each field's unit under its name ('ID  W  C', the dcgmi dmon reference page):
    # GPUs, power and temperature read; no Xid column, no event
    dmon = "#Entity   POWER   TMPTR\nID        W       C\nGPU 0     16.609  42\nGPU 1     N/A     44\n"
    (part,) = parse_text(dmon, "dmon")
    assert [(g.index, g.power_draw_w, g.temperature_c) for g in part.rig.gpus] == [(0, 16.609, 42.0), (1, None, 44.0)]
    assert part.rig.kernel.events is None


def test_the_diagnostics_mig_refusal_is_mig_on_for_that_gpu() -> None:
    # https://github.com/NVIDIA/DCGM/issues/70 (bergentruckung): dcgmi diag 3.1.3 on a box of A100s, some in MIG mode
    text = (
        "% dcgmi diag -i 0 -r 1\n"
        "GPU 2's MIG configuration is incompatible with the diagnostic because it prevents access to the entire GPU. \n"
    )
    (part,) = parse_text(text, "diag")
    assert [(g.index, g.mig_mode) for g in part.rig.gpus] == [(2, True)]
    # https://github.com/mej/nhc/issues/29 (mick-t): nvvs 418's own message, the same words
    path = _one("s18-dcgm/nvvs-418-*.txt")
    assert [(g.index, g.mig_mode) for g in import_files([path]).gpus] == [(0, True)]
    assert ("GA314", "warn", "GPU 0") in set(_found(path))
