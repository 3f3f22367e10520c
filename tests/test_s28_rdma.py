"""Set 28's RDMA classes read from real pastes: libibverbs' own errors when no verbs device is usable (rdma-core
libibverbs/init.c prints them), an ``ibv_devinfo -v`` fragment of a port's GID table, and ``ls /dev/infiniband`` with
``ibv_devices`` in a container. Each class on its corpus file(s) and on another public paste of the same form."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.corpus_cases import CORPUS, import_paste, run_import

RDMA = CORPUS / "s28-rdma-logs"


def _scan(path: Path) -> dict[str, Any]:
    rc, scan = run_import([path])
    assert rc == 0 and scan is not None
    return scan


def _codes(scan: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for f in scan["findings"]:
        if f["severity"] != "not-checked":
            out.setdefault(f["code"], []).append(f)
    return out


# -- 1. libibverbs' errors: no verbs device usable ------------------------------------------------------------------


def test_no_ib_devices_after_the_missing_provider_config_warns_with_the_provider_fix() -> None:
    # github.com/dsx-ai-factory/infra-controller/pull/5251: ibverbs-providers missing from the image
    scan = _scan(RDMA / "ibv-devinfo-no-config-dir-no-ib-devices-missing-providers_jumpojoy.txt")
    (f,) = _codes(scan)["GA829"]
    assert f["severity"] == "warn" and "ibv_devinfo found no device" in f["message"]
    assert "/etc/libibverbs.d" in f["message"] and "ibverbs-providers" in f["fix"]
    assert scan["network"]["rdma_ports"] is None
    assert scan["network"]["unavailable"]["rdma_ports"].startswith("libibverbs could not use an RDMA device")
    assert not {"GA803", "GA822", "GA826"} & set(_codes(scan))


def test_no_userspace_driver_for_each_uverbs_device_warns() -> None:
    # github.com/nminoru/pib/issues/2: the kernel's two verbs devices, no provider (libpib) for them
    scan = _scan(RDMA / "ibv-devinfo-2014-pib-no-userspace-driver-uverbs0-uverbs1_hiroyuki-sato.txt")
    (f,) = _codes(scan)["GA829"]
    assert f["severity"] == "warn" and "no user-space provider" in f["message"]
    assert "uverbs1" in f["observed"]["no-provider"] and "uverbs0" in f["observed"]["no-provider"]
    assert set(_codes(scan)) == {"GA829"}


# github.com/SoftRoCE/rxe-dev/issues/48: ibv_devices with the rxe provider not installed
RXE_48 = (
    "xenmaster1@xenmaster1-OptiPlex-9020:/usr/src/librxe-dev$ ibv_devices\n"
    "libibverbs: Warning: couldn't load driver 'rxe': librxe-rdmav2.so: cannot open shared object file: No such file "
    "or directory\n"
    "libibverbs: Warning: no userspace device-specific driver found for /sys/class/infiniband_verbs/uverbs0\n"
    "    device                 node GUID\n"
    "    ------              ----------------\n"
)
# github.com/NVIDIA/nccl/issues/1044: a leftover ipath.driver in /etc/libibverbs.d on a RoCE node that works
NCCL_1044 = (
    "libibverbs: Warning: couldn't load driver 'libipathverbs-rdmav25.so': libipathverbs-rdmav25.so: cannot open "
    "shared object file: No such file or directory\n"
)
# github.com/ofiwg/libfabric/issues/975: usNIC devices with no libibverbs provider shipped for them
LIBFABRIC_975 = """$ ./simple/fi_info
libibverbs: Warning: no userspace device-specific driver found for /sys/class/infiniband_verbs/uverbs2
libibverbs: Warning: no userspace device-specific driver found for /sys/class/infiniband_verbs/uverbs1
libibverbs: Warning: no userspace device-specific driver found for /sys/class/infiniband_verbs/uverbs0
librdmacm: Fatal: no RDMA devices found
fi_getinfo(): 173, -19 (No such device)
"""


def test_other_public_pastes_of_libibverbs_errors(tmp_path: Path) -> None:
    rxe = _codes(import_paste(tmp_path, RXE_48))["GA829"][0]
    assert rxe["severity"] == "warn" and "ibv_devices lists no device" in rxe["observed"]["no-devices"]
    assert "librxe-rdmav2.so" in rxe["observed"]["load-failed"]
    fabric = _codes(import_paste(tmp_path, LIBFABRIC_975))["GA829"][0]
    assert fabric["severity"] == "warn" and fabric["observed"]["no-provider"].count("uverbs") == 3
    leftover = _codes(import_paste(tmp_path, NCCL_1044))["GA829"][0]
    assert leftover["severity"] == "info" and "leftover" in leftover["fix"]


def test_a_provider_older_than_the_kernel_abi_in_a_pod_warns_with_the_rdma_core_fix() -> None:
    # github.com/k8snetworkplumbingwg/sriov-cni/issues/348: bnxt_re's provider supports ABI 1, the kernel's is 6
    scan = _scan(RDMA / "pod-rdma-link-bnxt-re-two-disabled-ibv-devinfo-abi-mismatch-no-devices_lululu-cloud.txt")
    codes = _codes(scan)
    (f,) = codes["GA829"]
    assert f["severity"] == "warn" and "kernel ABI of 6 (supports 1 to 1)" in f["message"]
    assert "rdma-core" in f["fix"] and "kernel's ABI" in f["fix"]
    assert sorted(x["subject"] for x in codes["GA803"]) == ["bnxt_re1 port 1", "bnxt_re3 port 1"]


# -- 2. an ibv_devinfo -v fragment of GIDs --------------------------------------------------------------------------


def test_a_gid_fragment_reads_the_port_link_and_its_gids() -> None:
    # github.com/NVIDIA/nccl/issues/769: phys_state and four GIDs of mlx5_bond_0's port, RoCE v1 and v2
    scan = _scan(RDMA / "ibv-devinfo-v-fragment-mlx5-bond-0-link-up-four-gids-roce-v1-v2_elevenxiang.txt")
    (port,) = scan["network"]["rdma_ports"]
    assert (port["phys_state"], port["link_layer"], port["state"]) == ("LinkUp", "Ethernet", None)
    assert port["unavailable"]["state"].endswith("it shows 4 GID(s), RoCE v1/v2")
    assert "port" in port["unavailable"] and "device" in port["unavailable"]
    assert not {"GA803", "GA822", "GA823", "GA826"} & set(_codes(scan))


# -- 3. ls /dev/infiniband and ibv_devices in a container -------------------------------------------------------------


def test_a_container_with_one_uverbs_node_lists_its_one_verbs_device() -> None:
    # github.com/kvcache-ai/Mooncake/pull/102: two erdma devices on the host, uverbs0 mounted, ibv_devices erdma_0
    scan = _scan(RDMA / "container-ls-infiniband-ibv-devices-erdma-one-uverbs-mounted-healthy_doujiang24.txt")
    assert [(p["device"], p["state"]) for p in scan["network"]["rdma_ports"]] == [("erdma_0", None)]
    notes = " ".join(scan["problems"])
    assert "erdma_0 (node GUID 02163efffe1041ea)" in notes
    assert "/sys/class/infiniband lists 2 RDMA device(s) of the kernel: erdma_0, erdma_1" in notes
    assert "/dev/infiniband holds 1 verbs device node(s) (uverbs0) and rdma_cm" in notes
    assert not _codes(scan)


# github.com/linux-rdma/rdma-core/pull/1060: a container given uverbs0 and uverbs2 of four HDR ports
RDMA_CORE_1060 = """# ls /sys/class/infiniband
mlx5_0  mlx5_1  mlx5_2  mlx5_3

# ls /dev/infiniband/
rdma_cm  ucm0  ucm2  uverbs0  uverbs2
"""
# github.com/SoftRoCE/rxe-dev/issues/75: ibv_devices with no device (rdma_rxe not bound to an interface)
RXE_75 = """root@arria10:/# ibv_devices
    device                 node GUID
    ------              ----------------
"""


def test_other_public_listings_of_verbs_devices(tmp_path: Path) -> None:
    notes = " ".join(import_paste(tmp_path, RDMA_CORE_1060)["problems"])
    assert "/dev/infiniband holds 2 verbs device node(s) (uverbs0, uverbs2) and rdma_cm, ucm0, ucm2" in notes
    assert "/sys/class/infiniband lists 4 RDMA device(s)" in notes
    empty = _codes(import_paste(tmp_path, RXE_75))["GA829"][0]
    assert empty["severity"] == "info" and "found no RDMA device" in empty["message"]


# github.com/weiyanhua100/rdma-examples (README.md): ibv_devices on a host with a dual-port ConnectX-5
SNAT01 = """[root@snat01 bin]# ibv_devices
    device                 node GUID
    ------              ----------------
    mlx5_0              043f720300c10530
    mlx5_1              043f720300c10531
"""


def test_ibv_devices_rows_are_the_verbs_devices(tmp_path: Path) -> None:
    scan = import_paste(tmp_path, SNAT01)
    assert [p["device"] for p in scan["network"]["rdma_ports"]] == ["mlx5_0", "mlx5_1"]
    assert "mlx5_1 (node GUID 043f720300c10531)" in " ".join(scan["problems"])
    assert not _codes(scan)
