"""Held-out set 20's storage and nvidia-smi -q classes, each on its corpus file and on another public sample of the
same form (cited where it is used). Forms checked against nvme-cli's history (nvme.c, then nvme-print.c)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuadvisor.importers.blockdev import parse_nvme_list
from tests.corpus_cases import run_import

CORPUS = Path(__file__).parent / "corpus"


def _read(folder: str, prefix: str) -> str:
    return next((CORPUS / folder).glob(prefix + "*")).read_text()


# -- nvme list across nvme-cli's versions ---------------------------------------------------------------------


def test_nvme_list_2015_crude_form_one_drive_a_namespace() -> None:
    """nvme-cli's first list (nvme.c, February 2015: ``"  %s\\t: NVM Express - %#x - %s - %x"``, the Identify model
    field not terminated, so the firmware runs on): https://github.com/linux-nvme/nvme-cli/issues/4"""
    devs = parse_nvme_list(_read("s20-storage", "nvme-list-2015"), "f")
    assert [(d.name, d.model) for d in devs] == [
        ("nvme0n1", "SAMSUNG MZWEI800HAGM-00003"),  # its partition nvme0n1p1 is not a drive
        ("nvme1n1", "MTR_SLC_8GB"),
        ("nvme2n1", "89KTF1604G3MS1TL"),
    ]
    assert all(d.size_bytes is None and "size_bytes" in d.unavailable for d in devs)  # no capacity shown: not 0


def test_nvme_list_2016_partition_rows_are_not_drives() -> None:
    """Before nvme-cli's pull request 53 (January 2016) each partition was a row: one 512 GB drive, not four.
    https://github.com/linux-nvme/nvme-cli/pull/53"""
    devs = parse_nvme_list(_read("s20-storage", "nvme-list-2016"), "f")
    assert [(d.name, d.model, d.size_bytes) for d in devs] == [("nvme0n1", "Samsung SSD 950 PRO", 512_110_000_000)]


# os-brick's fixture of the same 2015-16 table (Node Model Version Namepace Usage Format FW Rev), from a real run:
# https://github.com/openstack/os-brick/blob/master/os_brick/tests/initiator/connectors/test_nvme.py
OS_BRICK = """
Node             Model                Version  Namepace Usage                      Format           FW Rev  
---------------- -------------------- -------- -------- -------------------------- ---------------- --------
/dev/nvme0n1     Vendor SSD 950 PRO   1.1      1         62.44  GB / 256.06  GB    512   B +  0 B   XXXXXXXX

"""  # noqa: W291


def test_nvme_list_version_column_of_another_sample() -> None:
    devs = parse_nvme_list(OS_BRICK, "f")
    assert [(d.name, d.model, d.size_bytes) for d in devs] == [("nvme0n1", "Vendor SSD 950 PRO", 256_060_000_000)]


# nvme-cli March to August 2016 (a30443523 .. 6ab2e9ef2): SN, Model (40 wide), Version, Namespace; its header
# written out from that printf, the row from the pull request 53's drive with the serial and FW of the thread
def test_nvme_list_sn_model_version_rows_by_shape() -> None:
    text = (
        "Node             SN                   Model                                    Version  Namespace Usage"
        "                      Format           FW Rev\n"
        "---------------- -------------------- ---------------------------------------- -------- --------- "
        "-------------------------- ---------------- --------\n"
        "/dev/nvme0n1     S2GMNCAGB00000       Samsung SSD 950 PRO 512GB                1.1      1"
        "          73.12  GB / 512.11  GB    512   B +  0 B   1B0QBXX7\n"
        "/dev/nvme0n1p1   S2GMNCAGB00000       Samsung SSD 950 PRO 512GB                1.1      1"
        "          73.12  GB / 512.11  GB    512   B +  0 B   1B0QBXX7\n"
    )
    devs = parse_nvme_list(text, "f")
    assert [(d.name, d.model, d.size_bytes) for d in devs] == [
        ("nvme0n1", "Samsung SSD 950 PRO 512GB", 512_110_000_000)
    ]


# -- nvme id-ctrl -----------------------------------------------------------------------------------------------


def _imported_devices(tmp_path: Path, text: str) -> list[dict[str, Any]]:
    path = tmp_path / "paste.txt"
    path.write_text(text)
    rc, scan = run_import([path])
    assert rc == 0 and scan is not None
    devices: list[dict[str, Any]] = scan["storage"]["paths"][0]["devices"]
    return devices


def test_nvme_id_ctrl_model_and_capacity(tmp_path: Path) -> None:
    """A Micron 9200 (mn, tnvmcap 1600321314816 bytes), named by the command above it (the controller nvme1):
    https://github.com/thomas-krenn/TKperf/issues/25"""
    devs = _imported_devices(tmp_path, _read("s20-storage", "nvme-id-ctrl"))
    assert [(d["name"], d["model"], d["size_bytes"]) for d in devs] == [
        ("nvme1", "Micron_9200_MTFDHAL1T6TCU", 1_600_321_314_816)
    ]


# nvme list (its ruler lost) then nvme id-ctrl of the same drive, from https://github.com/FOGProject/fos/issues/72
FOG = (
    ">nvme list\n\n"
    "Node             SN                   Model                                    Namespace Usage"
    "                      Format           FW Rev\n\n"
    "/dev/nvme0n1     50026B7685F13C1E     KINGSTON SNV2S250G                               "
    " 250.06  GB / 250.06  GB    512   B +  0 B   ELFK0S.4\n\n"
    """>nvme id-ctrl dev/nvme0n1

NVME Identify Controller:
vid       : 0x2646
ssvid     : 0x2646
sn        : 50026B7685F13C1E
mn        : KINGSTON SNV2S250G
fr        : ELFK0S.4
rab       : 4
ieee      : 0026b7
cmic      : 0
mdts      : 6
cntlid    : 0
ver       : 0x10400
tnvmcap   : 250059350016
unvmcap   : 0
"""
)


def test_nvme_id_ctrl_after_nvme_list_is_the_same_drive(tmp_path: Path) -> None:
    devs = _imported_devices(tmp_path, FOG)
    assert [(d["name"], d["model"]) for d in devs] == [("nvme0n1", "KINGSTON SNV2S250G")]  # one drive, not two
    assert devs[0]["size_bytes"] in (250_060_000_000, 250_059_350_016)  # nvme list's rounding, or id-ctrl's bytes


# -- df -h / df -hT ---------------------------------------------------------------------------------------------


def _mounts(tmp_path: Path, text: str) -> dict[str, dict[str, Any]]:
    path = tmp_path / "paste.txt"
    path.write_text(text)
    rc, scan = run_import([path])
    assert rc == 0 and scan is not None
    return {sp["path"]: sp for sp in scan["storage"]["paths"]}


def test_df_h_mounts_sizes_and_a_network_home(tmp_path: Path) -> None:
    """An Azure HB120rs_v2 node's df -h (powers of 1024; no type without -T):
    https://github.com/Azure/az-hop/issues/449"""
    mounts = _mounts(tmp_path, next((CORPUS / "s15-storage").glob("df-h-*")).read_text())
    assert sorted(mounts) == ["/", "/anfhome", "/boot", "/boot/efi", "/dev/shm", "/mnt/resource"]  # not /run, /sys
    root = mounts["/"]
    assert (root["fs_source"], root["size_bytes"], root["free_bytes"]) == ("/dev/sda2", 30 * 2**30, 10 * 2**30)
    assert root["fs_type"] is None and "fs_type" in root["unavailable"]  # df -h does not show it: not a guess
    assert (mounts["/anfhome"]["network"], mounts["/anfhome"]["size_bytes"]) == (True, 4 * 2**40)  # 10.0.2.4:/...


# df -hT in a pod with a GPFS volume: https://github.com/IBM/ibm-spectrum-scale-csi/issues/80
GPFS = """sh-4.2$ df -hT
Filesystem             Type     Size  Used Avail Use% Mounted on
overlay                overlay  200G   44G  157G  22% /
tmpfs                  tmpfs     64M     0   64M   0% /dev
shm                    tmpfs     64M     0   64M   0% /dev/shm
/dev/mapper/sr650-root xfs      200G   44G  157G  22% /etc/hosts
remote_fs0_1m          gpfs      15T   61G   15T   1% /var/lib/mongodb/data
tmpfs                  tmpfs     63G     0   63G   0% /proc/acpi
"""


def test_df_ht_filesystem_types(tmp_path: Path) -> None:
    mounts = _mounts(tmp_path, GPFS)
    assert sorted(mounts) == ["/", "/dev/shm", "/etc/hosts", "/var/lib/mongodb/data"]
    data = mounts["/var/lib/mongodb/data"]
    assert (data["fs_type"], data["network"], data["size_bytes"]) == ("gpfs", True, 15 * 2**40)
    assert (mounts["/etc/hosts"]["fs_type"], mounts["/etc/hosts"]["network"]) == ("xfs", False)


# df -H (powers of 1000) on a Slurm controller: https://github.com/GoogleCloudPlatform/cluster-toolkit/pull/3827
SI = """[root@msbucket-controller ext_harshthakkar_google_com]# df -H
Filesystem               Size  Used Avail Use% Mounted on
devtmpfs                 8.4G     0  8.4G   0% /dev
/dev/sda2                 54G   19G   36G  34% /
/dev/sdb                  53G  205k   50G   1% /var/spool/slurm
home-cont-msbucket39901  1.2P     0  1.2P   0% /home
"""


def test_df_si_units_after_its_command(tmp_path: Path) -> None:
    mounts = _mounts(tmp_path, SI)
    assert (mounts["/"]["size_bytes"], mounts["/"]["free_bytes"]) == (54 * 10**9, 36 * 10**9)
    assert mounts["/home"]["size_bytes"] == 1.2e15


# -- nvidia-smi -q's Processes section alone --------------------------------------------------------------------


def test_smi_q_processes_fragment_cut_in_a_key_is_read(tmp_path: Path) -> None:
    """Windows desktop processes (C+G, 'Not available in WDDM driver model'), the paste cut in 'GPU instan': no GPU,
    no memory figure taken for a value. https://github.com/ollama/ollama/issues/10393"""
    path = next((CORPUS / "s20-smi-q").glob("smi-q-windows-processes-*"))
    rc, scan = run_import([path])
    assert rc == 0 and scan is not None and scan["gpus"] == []
    assert scan["node"]["gpu_processes"] is None  # their GPU is not shown: no process list with made-up memory
    assert any("Processes section alone: 4 process(es) (type C+G)" in p for p in scan["problems"])


# the same section on another Windows machine: https://github.com/ollama/ollama/issues/11039
EPIC = """        GPU instance ID                   : N/A
        Compute instance ID               : N/A
        Process ID                        : 10732
            Type                          : C+G
            Name                          : C:\\Program Files (x86)\\Epic Games\\Launcher\\Portal\\Binaries\\Win64\\EpicGamesLauncher.exe
            Used GPU Memory               : Not available in WDDM driver model
        GPU instance ID                   : N/A
        Compute instance ID               : N/A
        Process ID                        : 10804
            Type                          : C+G
            Name                          : C:\\Program Files\\Dell\\Dell Peripheral Manager\\DPM.exe
            Used GPU Memory               : Not available in WDDM driver model
        GPU instance ID                   : N/A
        Compute instance ID               : N/A
        Process ID                        : 13008
            Type                          : C+G
"""  # noqa: E501


def test_smi_q_processes_fragment_of_another_machine_whole_and_cut(tmp_path: Path) -> None:
    for text, count in ((EPIC, 3), (EPIC + "        GPU instance I", 3)):  # as pasted; then cut in a key
        path = tmp_path / "paste.txt"
        path.write_text(text)
        rc, scan = run_import([path])
        assert rc == 0 and scan is not None and scan["gpus"] == []
        assert any(f"Processes section alone: {count} process(es)" in p for p in scan["problems"])


# -- CUDA samples busGrind ----------------------------------------------------------------------------------------


def test_busgrind_host_device_matrix_per_gpu_copies() -> None:
    """busGrind -p 1 on eight GPUs: the single-device matrix's D2H and H2D per GPU (the concurrent matrix is all
    devices at once, not a link's figure). https://github.com/NVIDIA/cuda-samples/issues/357"""
    from gpuadvisor.importers.cuda_samples_busgrind import parse

    rig = parse(_read("s9-cuda-samples", "busgrind-"), "f")
    assert [g.index for g in rig.gpus] == list(range(8))
    figures = {(m.kind, m.gpus[0]): m.value_gbps for m in rig.measurements}
    assert (figures[("d2h", 0)], figures[("h2d", 0)], figures[("d2h", 7)]) == (56.83, 56.17, 53.53)
    assert all(m.memory == "pinned" and m.concurrent is False for m in rig.measurements)
    assert "bidirectional copy on this device: 7.25 GB/s" in " ".join(
        n for m in rig.measurements if m.gpus == [6] for n in m.notes
    )
