"""A simulated NVML: the pynvml calls the probe makes, served from a rig description.

Same function names, arguments, return shapes and exceptions (pynvml's own NVMLError subclasses, raised by
code) as nvidia-ml-py, so ``probes.nvml`` runs unchanged against an 8-GPU DGX in tests and demos. Only the
calls the probe uses are implemented; anything else is absent, which the probe reports as "function not
found" exactly as it would with an old binding.

pynvml itself (a large module, ~10 ms to import) is imported when the simulated library first raises or hands out
one of its structures, not when this module is imported.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from gpuadvisor.catalog import brands

from .nvml import CLOCKS_EVENT_REASONS, NVLINK_ERROR_COUNTERS, P2P_STATUS
from .pcie import PciPlace, Sysfs, level_between
from .rigdesc import GpuDesc, RigDesc

_LEVEL_CODES = {"PIX": 10, "PXB": 20, "PHB": 30, "NODE": 40, "SYS": 50}
_P2P_CODES = {v: k for k, v in P2P_STATUS.items()}
_REASON_BITS = {v: k for k, v in CLOCKS_EVENT_REASONS.items()}
_NVSWITCH_BUS_BASE = 0xE0


def _pynvml() -> Any:
    import pynvml

    return pynvml


def _raise(name: str) -> None:
    """Raise pynvml's NVMLError for the code pynvml names ``name`` (NVML_ERROR_NOT_SUPPORTED...)."""
    pynvml = _pynvml()
    raise pynvml.NVMLError(getattr(pynvml, name))


class _Binding:
    """A class attribute that is pynvml's own ``name``, looked up (and pynvml imported) when first read."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        return getattr(_pynvml(), self.name)


_COUNTER_NAMES = {v: k for k, v in NVLINK_ERROR_COUNTERS.items()}


class SimNvml:
    """Looks like the ``pynvml`` module to the probe."""

    NVMLError = _Binding("NVMLError")

    def __init__(self, desc: RigDesc, sysfs_root: str | Path | Sysfs) -> None:
        self.desc = desc
        self._init = False
        sysfs = sysfs_root if isinstance(sysfs_root, Sysfs) else Sysfs(sysfs_root)
        self._places: list[PciPlace] = []
        for g in desc.gpus:
            place = sysfs.place(g.bus_id)[1]  # the generated tree always holds every GPU of the description
            self._places.append(place or PciPlace((), (), None, None))
        # NVLink peers: (gpu, link) -> remote ("gpu", index) or ("switch", n)
        self._links: dict[int, list[tuple[str, int]]] = {g.index: [] for g in desc.gpus}
        for g in desc.gpus:
            if g.props["nvlink_fabric"] == "nvswitch":
                first, count = int(g.props["first_nvswitch"]), max(1, int(g.props["nvswitches"]))
                self._links[g.index] = [("switch", first + link % count) for link in range(int(g.props["nvlinks"]))]
        for a, b, n in desc.nvlink_bridges:
            self._links[a] += [("gpu", b)] * n
            self._links[b] += [("gpu", a)] * n

    # -- library -------------------------------------------------------------------------------------------
    def nvmlInit(self) -> None:
        self._init = True

    def nvmlShutdown(self) -> None:
        self._init = False

    def _ready(self) -> None:
        if not self._init:
            _raise("NVML_ERROR_UNINITIALIZED")

    def nvmlSystemGetDriverVersion(self) -> str:
        self._ready()
        return str(self.desc.software.get("driver_version", "550.54.15"))

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        self._ready()
        major, minor = str(self.desc.software.get("cuda_driver_version", "12.4")).split(".")[:2]
        return int(major) * 1000 + int(minor) * 10

    nvmlSystemGetCudaDriverVersion_v2 = nvmlSystemGetCudaDriverVersion

    def nvmlSystemGetNVMLVersion(self) -> str:
        self._ready()
        # NVML's version string is "<CUDA major of the driver>.<driver version>": "11.470.57.02" for an R470 driver
        # (CUDA 11.4), "12.535.183.01" for R535 (nvml.h, nvmlSystemGetNVMLVersion; nvidia-smi -q "NVML Version").
        cuda_major = str(self.desc.software.get("cuda_driver_version", "12.4")).split(".")[0]
        return str(self.desc.software.get("nvml_version", f"{cuda_major}.{self.nvmlSystemGetDriverVersion()}"))

    def nvmlDeviceGetCount(self) -> int:
        self._ready()
        return len(self.desc.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> GpuDesc:
        self._ready()
        if not 0 <= index < len(self.desc.gpus):
            _raise("NVML_ERROR_INVALID_ARGUMENT")
        return self.desc.gpus[index]

    # -- device --------------------------------------------------------------------------------------------
    def _dev(self, h: GpuDesc, fn: str) -> dict[str, Any]:
        self._ready()
        p = h.props
        if p["lost"]:
            _raise("NVML_ERROR_GPU_IS_LOST")
        if fn in p["unsupported"]:
            _raise("NVML_ERROR_NOT_SUPPORTED")
        if fn in p["no_permission"]:
            _raise("NVML_ERROR_NO_PERMISSION")
        return p

    def nvmlDeviceGetName(self, h: GpuDesc) -> str:
        return str(self._dev(h, "nvmlDeviceGetName")["name"])

    def nvmlDeviceGetBrand(self, h: GpuDesc) -> int:
        """The preset's "brand" (nvidia-smi's word), else the one its name shows, else NVIDIA (a data-centre part)."""
        p = self._dev(h, "nvmlDeviceGetBrand")
        word = p["brand"] or brands.from_name(str(p["name"])) or "NVIDIA"
        return next((k for k, b in brands.NVML_BRANDS.items() if b.lower() == word.lower()), brands.NVML_BRAND_UNKNOWN)

    def nvmlDeviceGetUUID(self, h: GpuDesc) -> str:
        self._dev(h, "nvmlDeviceGetUUID")
        return h.uuid

    def nvmlDeviceGetSerial(self, h: GpuDesc) -> str:
        self._dev(h, "nvmlDeviceGetSerial")
        return h.serial

    def nvmlDeviceGetPciInfo(self, h: GpuDesc) -> SimpleNamespace:
        self._dev(h, "nvmlDeviceGetPciInfo")
        domain, bus, devfn = h.bus_id.split(":")
        return SimpleNamespace(busId=f"{domain:0>8}:{bus}:{devfn}".upper(), bus=int(bus, 16))  # NVML: %08x

    def nvmlDeviceGetArchitecture(self, h: GpuDesc) -> int:
        return int(self._dev(h, "nvmlDeviceGetArchitecture")["architecture"])

    def nvmlDeviceGetCudaComputeCapability(self, h: GpuDesc) -> tuple[int, int]:
        major, minor = str(self._dev(h, "nvmlDeviceGetCudaComputeCapability")["compute_capability"]).split(".")
        return int(major), int(minor)

    def nvmlDeviceGetMemoryInfo(self, h: GpuDesc) -> SimpleNamespace:
        p = self._dev(h, "nvmlDeviceGetMemoryInfo")
        total = int(p["memory_total_mib"]) * 1024 * 1024
        used = int(p["memory_used_mib"]) * 1024 * 1024
        return SimpleNamespace(total=total, used=used, free=total - used)

    def nvmlDeviceGetPowerManagementLimit(self, h: GpuDesc) -> int:
        return int(float(self._dev(h, "nvmlDeviceGetPowerManagementLimit")["power_limit_w"]) * 1000)

    def nvmlDeviceGetPowerManagementDefaultLimit(self, h: GpuDesc) -> int:
        return int(float(self._dev(h, "nvmlDeviceGetPowerManagementDefaultLimit")["power_default_limit_w"]) * 1000)

    def nvmlDeviceGetPowerUsage(self, h: GpuDesc) -> int:
        return int(float(self._dev(h, "nvmlDeviceGetPowerUsage")["power_draw_w"]) * 1000)

    def nvmlDeviceGetTemperature(self, h: GpuDesc, sensor: int) -> int:
        return int(self._dev(h, "nvmlDeviceGetTemperature")["temperature_c"])

    def nvmlDeviceGetMaxClockInfo(self, h: GpuDesc, clock: int) -> int:
        return int(self._dev(h, "nvmlDeviceGetMaxClockInfo")["sm_clock_max_mhz"])

    def nvmlDeviceGetEccMode(self, h: GpuDesc) -> list[int]:
        ecc = self._dev(h, "nvmlDeviceGetEccMode")["ecc"]
        if ecc == "unsupported":
            _raise("NVML_ERROR_NOT_SUPPORTED")
        return [int(bool(ecc)), int(bool(ecc))]

    def nvmlDeviceGetTotalEccErrors(self, h: GpuDesc, error_type: int, counter_type: int) -> int:
        p = self._dev(h, "nvmlDeviceGetTotalEccErrors")
        if p["ecc"] == "unsupported" or p["ecc_errors"] == "unsupported":
            _raise("NVML_ERROR_NOT_SUPPORTED")
        key = ("corrected" if error_type == 0 else "uncorrected") + ("_volatile" if counter_type == 0 else "_aggregate")
        return int(p["ecc_errors"].get(key, 0))

    def nvmlDeviceGetMemoryErrorCounter(self, h: GpuDesc, error_type: int, counter_type: int, location: int) -> int:
        p = self._dev(h, "nvmlDeviceGetMemoryErrorCounter")
        if p["ecc"] == "unsupported" or p["ecc_errors"] == "unsupported":
            _raise("NVML_ERROR_NOT_SUPPORTED")
        if location != 7 or error_type != 0:  # the probe asks for corrected SRAM counts only
            _raise("NVML_ERROR_NOT_SUPPORTED")
        return int(p["ecc_errors"].get("corrected_sram" + ("_volatile" if counter_type == 0 else "_aggregate"), 0))

    def nvmlDeviceGetPerformanceState(self, h: GpuDesc) -> int:
        return int(self._dev(h, "nvmlDeviceGetPerformanceState")["performance_state"])

    def nvmlDeviceGetRetiredPages(self, h: GpuDesc, cause: int) -> list[int]:
        rp = self._dev(h, "nvmlDeviceGetRetiredPages")["retired_pages"]
        if rp == "unsupported":
            _raise("NVML_ERROR_NOT_SUPPORTED")
        n = int(rp.get("single_bit" if cause == 0 else "double_bit", 0))
        return [0x1000 * (k + 1) for k in range(n)]

    def nvmlDeviceGetRetiredPagesPendingStatus(self, h: GpuDesc) -> int:
        rp = self._dev(h, "nvmlDeviceGetRetiredPagesPendingStatus")["retired_pages"]
        if rp == "unsupported":
            _raise("NVML_ERROR_NOT_SUPPORTED")
        return int(bool(rp.get("pending", False)))

    def nvmlDeviceGetRemappedRows(self, h: GpuDesc) -> tuple[int, int, int, int]:
        rows = self._dev(h, "nvmlDeviceGetRemappedRows")["remapped_rows"]
        if rows == "unsupported":
            _raise("NVML_ERROR_NOT_SUPPORTED")
        c, u, pending, failure = rows
        return int(c), int(u), int(bool(pending)), int(bool(failure))

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: GpuDesc) -> int:
        reasons = self._dev(h, "nvmlDeviceGetCurrentClocksEventReasons")["clocks_event_reasons"]
        return sum(_REASON_BITS[r] for r in reasons)

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, h: GpuDesc) -> int:
        return self.nvmlDeviceGetCurrentClocksEventReasons(h)

    def nvmlDeviceGetPersistenceMode(self, h: GpuDesc) -> int:
        return int(bool(self._dev(h, "nvmlDeviceGetPersistenceMode")["persistence"]))

    def nvmlDeviceGetMigMode(self, h: GpuDesc) -> list[int]:
        mig = self._dev(h, "nvmlDeviceGetMigMode")["mig"]
        if mig == "unsupported":
            _raise("NVML_ERROR_NOT_SUPPORTED")
        return [int(bool(mig)), int(bool(mig))]

    def nvmlDeviceGetNumaNodeId(self, h: GpuDesc) -> int:
        self._dev(h, "nvmlDeviceGetNumaNodeId")
        numa = self._places[h.index].numa_node
        return -1 if numa is None else numa

    def nvmlDeviceGetCpuAffinity(self, h: GpuDesc, cpu_set_size: int) -> list[int]:
        self._dev(h, "nvmlDeviceGetCpuAffinity")
        from .nvml import parse_cpulist

        numa = self._places[h.index].numa_node
        cpus_text = next((n.get("cpus", "") for n in self.desc.numa if n["id"] == numa), "")
        words = [0] * cpu_set_size
        for cpu in parse_cpulist(cpus_text):
            if cpu // 64 < cpu_set_size:
                words[cpu // 64] |= 1 << (cpu % 64)
        return words

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h: GpuDesc) -> int:
        return int(self._dev(h, "nvmlDeviceGetCurrPcieLinkGeneration")["pcie_gen"])

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h: GpuDesc) -> int:
        return int(self._dev(h, "nvmlDeviceGetMaxPcieLinkGeneration")["pcie_max_gen"])

    def nvmlDeviceGetGpuMaxPcieLinkGeneration(self, h: GpuDesc) -> int:
        return int(self._dev(h, "nvmlDeviceGetGpuMaxPcieLinkGeneration")["pcie_gpu_max_gen"])

    def nvmlDeviceGetCurrPcieLinkWidth(self, h: GpuDesc) -> int:
        return int(self._dev(h, "nvmlDeviceGetCurrPcieLinkWidth")["pcie_width"])

    def nvmlDeviceGetMaxPcieLinkWidth(self, h: GpuDesc) -> int:
        return int(self._dev(h, "nvmlDeviceGetMaxPcieLinkWidth")["pcie_max_width"])

    def nvmlDeviceGetPcieReplayCounter(self, h: GpuDesc) -> int:
        return int(self._dev(h, "nvmlDeviceGetPcieReplayCounter")["pcie_replay"])

    # -- NVLink --------------------------------------------------------------------------------------------
    def _link(self, h: GpuDesc, link: int, fn: str) -> tuple[str, int]:
        p = self._dev(h, fn)
        links = self._links[h.index]
        if not links and int(p["nvlinks"]) == 0:
            _raise("NVML_ERROR_NOT_SUPPORTED")
        total = max(int(p["nvlinks"]), len(links))
        if not 0 <= link < total:
            _raise("NVML_ERROR_INVALID_ARGUMENT")
        return links[link] if link < len(links) else ("none", -1)

    def nvmlDeviceGetNvLinkState(self, h: GpuDesc, link: int) -> int:
        remote = self._link(h, link, "nvmlDeviceGetNvLinkState")
        return int(remote[0] != "none" and link not in h.props["nvlink_inactive"])

    def nvmlDeviceGetNvLinkVersion(self, h: GpuDesc, link: int) -> int:
        self._link(h, link, "nvmlDeviceGetNvLinkVersion")
        return int(h.props["nvlink_version"] or 0)

    def nvmlDeviceGetNvLinkRemotePciInfo(self, h: GpuDesc, link: int) -> SimpleNamespace:
        kind, idx = self._link(h, link, "nvmlDeviceGetNvLinkRemotePciInfo")
        if kind == "gpu":
            bus_id = self.desc.gpus[idx].bus_id
        elif kind == "switch":
            bus_id = f"0000:{_NVSWITCH_BUS_BASE + idx:02x}:00.0"
        else:
            _raise("NVML_ERROR_NOT_SUPPORTED")
        domain, bus, devfn = bus_id.split(":")
        return SimpleNamespace(busId=f"0000{domain}:{bus}:{devfn}".upper())

    def nvmlDeviceGetNvLinkRemoteDeviceType(self, h: GpuDesc, link: int) -> int:
        kind, _ = self._link(h, link, "nvmlDeviceGetNvLinkRemoteDeviceType")
        return {"gpu": 0, "switch": 2}.get(kind, 0xFF)

    def nvmlDeviceGetNvLinkErrorCounter(self, h: GpuDesc, link: int, counter: int) -> int:
        self._link(h, link, "nvmlDeviceGetNvLinkErrorCounter")
        name = _COUNTER_NAMES[counter]
        return int(h.props["nvlink_errors"].get(str(link), {}).get(name, 0))

    # -- pairs ---------------------------------------------------------------------------------------------
    def _link_summary(self, index: int) -> tuple[bool, frozenset[int]]:
        """(has a link to an NVSwitch, GPUs it links to directly): once per GPU, not once per pair and call."""
        cache = self.__dict__.setdefault("_link_summaries", {})
        if index not in cache:
            links = self._links[index]
            cache[index] = (any(k == "switch" for k, _ in links), frozenset(i for k, i in links if k == "gpu"))
        return cache[index]

    def nvmlDeviceGetTopologyCommonAncestor(self, a: GpuDesc, b: GpuDesc) -> int:
        self._dev(a, "nvmlDeviceGetTopologyCommonAncestor")
        self._dev(b, "nvmlDeviceGetTopologyCommonAncestor")
        return _LEVEL_CODES[level_between(self._places[a.index], self._places[b.index])]

    def nvmlDeviceGetP2PStatus(self, a: GpuDesc, b: GpuDesc, caps_index: int) -> int:
        self._dev(a, "nvmlDeviceGetP2PStatus")
        self._dev(b, "nvmlDeviceGetP2PStatus")
        sw_a, peers_a = self._link_summary(a.index)
        sw_b, _ = self._link_summary(b.index)
        linked = (sw_a or bool(peers_a)) and (b.index in peers_a or sw_a) and (sw_b or b.index in peers_a)
        if linked:
            return 0
        return _P2P_CODES[self.desc.p2p_pcie]

    # -- beyond the GPU: fabric registration and processes --------------------------------------------------
    # The fabric structures are nvidia-ml-py's own: the probe allocates one and passes it by reference, as with
    # the real library.
    c_nvmlGpuFabricInfo_t = _Binding("c_nvmlGpuFabricInfo_t")
    c_nvmlGpuFabricInfoV_t = _Binding("c_nvmlGpuFabricInfoV_t")

    def _fabric(self, h: GpuDesc, name: str, ref: Any, health: bool) -> int:
        p = self._dev(h, name)
        info = ref._obj  # ctypes.byref(struct): the struct the caller allocated
        state = p["fabric_state"]
        if state is None:
            if p["nvlink_fabric"] != "nvswitch" or int(p["architecture"]) < 9:
                _raise("NVML_ERROR_NOT_SUPPORTED")
            state = "completed"
        code = {"not-supported": 0, "not-started": 1, "in-progress": 2, "completed": 3}[state]
        info.state = code
        info.status = int(p["fabric_status"])
        info.cliqueId = 32766 if code == 3 else 0
        if health:
            degraded = p.get("fabric_degraded_bandwidth")
            info.healthMask = 0 if degraded is None else (1 if degraded else 2)
        return int(_pynvml().NVML_SUCCESS)

    def nvmlDeviceGetGpuFabricInfo(self, h: GpuDesc, gpuFabricInfo: Any) -> int:
        return self._fabric(h, "nvmlDeviceGetGpuFabricInfo", gpuFabricInfo, health=False)

    def nvmlDeviceGetGpuFabricInfoV(self, h: GpuDesc, gpuFabricInfo: Any) -> int:
        return self._fabric(h, "nvmlDeviceGetGpuFabricInfoV", gpuFabricInfo, health=True)

    def nvmlDeviceGetComputeRunningProcesses(self, h: GpuDesc) -> list[SimpleNamespace]:
        self._dev(h, "nvmlDeviceGetComputeRunningProcesses")
        return [
            SimpleNamespace(pid=int(q.get("pid", 0)), usedGpuMemory=int(q.get("used_mib", 0)) * 2**20)
            for q in self.desc.node.get("processes", [])
            if int(q.get("gpu", 0)) == h.index
        ]
