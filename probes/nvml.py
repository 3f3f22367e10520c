"""NVML, through one choke point. The only module that calls pynvml functions.

``Nvml`` wraps a pynvml-like library (the real ``pynvml`` from nvidia-ml-py, or ``probes.simnvml.SimNvml``
serving a rig description): ``nvmlInit`` once, every call made by name through ``query`` so a function missing
from an older binding is "function not found" rather than an AttributeError, and every NVML error classified
by its code into the reason kept beside the null field. ``probe_gpus`` reads all GPUs, each in its own try:
one lost GPU is one row with its reason, the others are still read.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any

from gpuadvisor import facts
from gpuadvisor.catalog import brands, generations
from gpuadvisor.facts import Gpu, NvLink, Pcie

from . import busid

# NVML return codes (nvml.h) -> the reason recorded beside a null field.
_REASONS = {
    3: facts.NOT_SUPPORTED,  # NVML_ERROR_NOT_SUPPORTED
    4: facts.NO_PERMISSION,  # NVML_ERROR_NO_PERMISSION
    9: facts.NO_DRIVER,  # NVML_ERROR_DRIVER_NOT_LOADED
    12: facts.NO_LIBRARY,  # NVML_ERROR_LIBRARY_NOT_FOUND
    13: facts.FUNCTION_NOT_FOUND,  # NVML_ERROR_FUNCTION_NOT_FOUND
    15: facts.GPU_LOST,  # NVML_ERROR_GPU_IS_LOST
    18: facts.DRIVER_MISMATCH,  # NVML_ERROR_LIB_RM_VERSION_MISMATCH
}
NVML_ERROR_INVALID_ARGUMENT = 2

# nvmlClocksEventReasons bit masks (nvml.h, "ClocksEventReasons"; older name ClocksThrottleReasons).
CLOCKS_EVENT_REASONS: dict[int, str] = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


def _architecture_name(code: Any) -> str:
    """nvmlDeviceArchitecture_t -> the generation's name (catalog/generations.toml)."""
    gen = generations.by_nvml_architecture(int(code))
    return gen.id if gen is not None else f"unknown ({int(code)})"


# nvmlGpuTopologyLevel_t -> nvidia-smi topo -m vocabulary.
TOPOLOGY_LEVELS = {0: "PIX", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
# nvmlGpuP2PStatus_t -> nvidia-smi topo -p2p legend.
P2P_STATUS = {0: "OK", 1: "CNS", 2: "GNS", 3: "TNS", 4: "DIS", 5: "NS", 6: "U"}
P2P_CAPS_INDEX_READ = 0
P2P_CAPS_INDEX_WRITE = 1
NVLINK_DEVICE_TYPES = {0: "gpu", 1: "ibmnpu", 2: "switch", 0xFF: "unknown"}
NVLINK_ERROR_COUNTERS = {"replay": 0, "recovery": 1, "crc_flit": 2, "crc_data": 3}
NVLINK_MAX_LINKS = 36  # nvidia-ml-py 13: NVML_NVLINK_MAX_LINKS; the loop stops at the first link past the last
TEMPERATURE_GPU = 0
CLOCK_SM = 1
MEMORY_ERROR_CORRECTED, MEMORY_ERROR_UNCORRECTED = 0, 1
VOLATILE_ECC, AGGREGATE_ECC = 0, 1
RETIRED_SINGLE_BIT, RETIRED_DOUBLE_BIT = 0, 1
MEMORY_LOCATION_SRAM = 7  # nvmlMemoryLocation_t (NVML_MEMORY_LOCATION_SRAM)


class Missing:
    """A field NVML could not give, with the reason."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __repr__(self) -> str:
        return f"Missing({self.reason!r})"


def _error_code(exc: BaseException) -> int | None:
    value = getattr(exc, "value", None)
    return value if isinstance(value, int) else None


def normalize_bus_id(bus_id: str | bytes | None) -> str | None:
    """NVML's "00000000:41:00.0" -> sysfs's "0000:41:00.0" (lower case; a domain above 0xffff keeps its eight
    digits: an Azure VM's "3E3F8E05:00:00.0"); what is no bus id is kept as NVML gave it, in lower case."""
    if bus_id is None:
        return None
    if isinstance(bus_id, bytes):
        bus_id = bus_id.decode("ascii", "replace")
    return busid.normalize_bus_id(bus_id) or bus_id.strip().lower()


class Nvml:
    def __init__(self, lib: Any) -> None:
        self.lib = lib
        self.init_error: str | None = None
        self._initialised = False
        self.binding_mismatches: list[str] = []

    def init(self) -> str | None:
        """nvmlInit once; return the reason it failed, or None."""
        if self._initialised:
            return None
        try:
            self.lib.nvmlInit()
        except Exception as e:  # pynvml raises NVMLError subclasses; a broken binding raises anything
            self.init_error = self.classify(e)
            return self.init_error
        self._initialised = True
        return None

    def shutdown(self) -> None:
        if self._initialised:
            with contextlib.suppress(Exception):  # nothing to do if shutdown fails
                self.lib.nvmlShutdown()
            self._initialised = False

    def classify(self, exc: BaseException) -> str:
        code = _error_code(exc)
        if code in _REASONS:
            return _REASONS[code]
        if isinstance(exc, OSError | FileNotFoundError):
            return facts.NO_LIBRARY
        return f"NVML error: {exc}" if str(exc) else f"NVML error: {exc.__class__.__name__}"

    def fabric_info(self, handle: Any) -> Any:
        """The GPU's fabric registration: ``nvmlDeviceGetGpuFabricInfoV`` (with the health mask) or, on an older
        binding or driver, ``nvmlDeviceGetGpuFabricInfo``. Both fill a structure the caller allocates and passes by
        reference (nvml.h); return it, or a ``Missing``."""
        import ctypes

        last: Missing = Missing(facts.FUNCTION_NOT_FOUND)
        for fn, struct in (
            ("nvmlDeviceGetGpuFabricInfoV", "c_nvmlGpuFabricInfoV_t"),
            ("nvmlDeviceGetGpuFabricInfo", "c_nvmlGpuFabricInfo_t"),
        ):
            cls = getattr(self.lib, struct, None)
            if cls is None:
                continue
            info = cls()
            got = self.query(fn, handle, ctypes.byref(info))
            if not isinstance(got, Missing):
                return info
            last = got
            if got.reason != facts.FUNCTION_NOT_FOUND:
                return got
        return last

    def query(self, name: str, *args: Any) -> Any:
        """Call ``name`` on the library; return its value or a ``Missing`` with the reason."""
        fn: Callable[..., Any] | None = getattr(self.lib, name, None)
        if fn is None:
            self.binding_mismatches.append(name)
            return Missing(facts.FUNCTION_NOT_FOUND)
        try:
            return fn(*args)
        except Exception as e:
            if _error_code(e) is None and not hasattr(e, "value"):
                # Not an NVMLError: a binding that does not match the driver (ctypes, TypeError...).
                self.binding_mismatches.append(f"{name}: {e.__class__.__name__}: {e}")
            return Missing(self.classify(e))

    def first(self, names: list[str], *args: Any) -> Any:
        """The first of several equivalent calls that answers (new name first, then the deprecated one)."""
        result: Any = Missing(facts.FUNCTION_NOT_FOUND)
        for n in names:
            result = self.query(n, *args)
            if not (isinstance(result, Missing) and result.reason == facts.FUNCTION_NOT_FOUND):
                return result
        return result


def _text(v: Any) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def _set(obj: facts.Unavailable, name: str, value: Any, convert: Callable[[Any], Any] | None = None) -> Any:
    if isinstance(value, Missing):
        obj.missing(name, value.reason)
        return None
    v = convert(value) if convert else value
    setattr(obj, name, v)
    return v


def cpulist_from_masks(masks: Any, bits: int = 64) -> str:
    """nvmlDeviceGetCpuAffinity's array of unsigned longs -> a cpulist such as "0-55,112-167"."""
    cpus: list[int] = []
    for w, m in enumerate(list(masks)):
        m = int(m) & ((1 << bits) - 1)
        while m:  # each set bit, lowest first
            low = m & -m
            cpus.append(w * bits + low.bit_length() - 1)
            m ^= low
    return format_cpulist(cpus)


def format_cpulist(cpus: list[int]) -> str:
    out: list[str] = []
    cpus = sorted(set(cpus))
    i = 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(out)


def parse_cpulist(text: str) -> list[int]:
    cpus: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-", 1)
            cpus.extend(range(int(a), int(b) + 1))
        else:
            cpus.append(int(part))
    return cpus


def probe_system(nv: Nvml, sw: facts.Software) -> None:
    _set(sw, "driver_version", nv.query("nvmlSystemGetDriverVersion"), _text)
    _set(
        sw,
        "cuda_driver_version",
        nv.first(["nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"]),
        lambda v: f"{int(v) // 1000}.{int(v) % 1000 // 10}",
    )
    _set(sw, "nvml_version", nv.query("nvmlSystemGetNVMLVersion"), _text)


def _probe_pcie(nv: Nvml, h: Any) -> Pcie:
    p = Pcie()
    _set(p, "current_gen", nv.query("nvmlDeviceGetCurrPcieLinkGeneration", h), int)
    _set(p, "max_gen", nv.query("nvmlDeviceGetMaxPcieLinkGeneration", h), int)
    _set(p, "gpu_max_gen", nv.query("nvmlDeviceGetGpuMaxPcieLinkGeneration", h), int)
    _set(p, "current_width", nv.query("nvmlDeviceGetCurrPcieLinkWidth", h), int)
    _set(p, "max_width", nv.query("nvmlDeviceGetMaxPcieLinkWidth", h), int)
    _set(p, "replay_counter", nv.query("nvmlDeviceGetPcieReplayCounter", h), int)
    return p


def _probe_nvlinks(nv: Nvml, h: Any, gpu: Gpu) -> None:
    for link in range(NVLINK_MAX_LINKS):
        state = nv.query("nvmlDeviceGetNvLinkState", h, link)
        if isinstance(state, Missing):
            if link == 0 and state.reason != facts.NOT_SUPPORTED:
                gpu.unavailable["nvlinks"] = state.reason
            break  # NotSupported at link 0: no NVLink; InvalidArgument past the last link: done
        nl = NvLink(link=link, active=bool(state))
        _set(nl, "version", nv.query("nvmlDeviceGetNvLinkVersion", h, link), int)
        remote = nv.query("nvmlDeviceGetNvLinkRemotePciInfo", h, link)
        if isinstance(remote, Missing):
            nl.missing("remote_bus_id", remote.reason)
        else:
            nl.remote_bus_id = normalize_bus_id(getattr(remote, "busId", None))
        _set(
            nl,
            "remote_device_type",
            nv.query("nvmlDeviceGetNvLinkRemoteDeviceType", h, link),
            lambda v: NVLINK_DEVICE_TYPES.get(int(v), "unknown"),
        )
        for cname, counter in NVLINK_ERROR_COUNTERS.items():
            v = nv.query("nvmlDeviceGetNvLinkErrorCounter", h, link, counter)
            if not isinstance(v, Missing):
                nl.errors[cname] = int(v)
        gpu.nvlinks.append(nl)


def probe_gpu(nv: Nvml, index: int, h: Any) -> Gpu:
    g = Gpu(index=index)
    _set(g, "name", nv.query("nvmlDeviceGetName", h), _text)
    brand = nv.query("nvmlDeviceGetBrand", h)
    if not isinstance(brand, Missing) and brands.from_nvml(brand) is None:
        brand = Missing(f"NVML reports brand {int(brand)} (unknown)")
    _set(g, "brand", brand, brands.from_nvml)
    _set(g, "uuid", nv.query("nvmlDeviceGetUUID", h), _text)
    _set(g, "serial", nv.query("nvmlDeviceGetSerial", h), _text)
    pci = nv.query("nvmlDeviceGetPciInfo", h)
    if isinstance(pci, Missing):
        g.missing("bus_id", pci.reason)
    else:
        g.bus_id = normalize_bus_id(getattr(pci, "busId", None))
    _set(
        g,
        "architecture",
        nv.query("nvmlDeviceGetArchitecture", h),
        _architecture_name,
    )
    _set(g, "compute_capability", nv.query("nvmlDeviceGetCudaComputeCapability", h), lambda v: f"{v[0]}.{v[1]}")
    mem = nv.query("nvmlDeviceGetMemoryInfo", h)
    if isinstance(mem, Missing):
        g.missing("memory_total_bytes", mem.reason)
        g.missing("memory_used_bytes", mem.reason)
    else:
        g.memory_total_bytes = int(mem.total)
        g.memory_used_bytes = int(mem.used)
    _set(g, "power_limit_w", nv.query("nvmlDeviceGetPowerManagementLimit", h), lambda v: int(v) / 1000)
    _set(g, "power_default_limit_w", nv.query("nvmlDeviceGetPowerManagementDefaultLimit", h), lambda v: int(v) / 1000)
    _set(g, "power_draw_w", nv.query("nvmlDeviceGetPowerUsage", h), lambda v: int(v) / 1000)
    _set(g, "temperature_c", nv.query("nvmlDeviceGetTemperature", h, TEMPERATURE_GPU), int)
    _set(g, "sm_clock_max_mhz", nv.query("nvmlDeviceGetMaxClockInfo", h, CLOCK_SM), int)

    ecc = nv.query("nvmlDeviceGetEccMode", h)
    ecc_on = _set(g, "ecc_enabled", ecc, lambda v: bool(v[0]))
    for fname, etype, ctype in (
        ("ecc_errors_corrected_volatile", MEMORY_ERROR_CORRECTED, VOLATILE_ECC),
        ("ecc_errors_uncorrected_volatile", MEMORY_ERROR_UNCORRECTED, VOLATILE_ECC),
        ("ecc_errors_corrected_aggregate", MEMORY_ERROR_CORRECTED, AGGREGATE_ECC),
        ("ecc_errors_uncorrected_aggregate", MEMORY_ERROR_UNCORRECTED, AGGREGATE_ECC),
    ):
        if ecc_on is False:
            g.missing(fname, "ECC is disabled on this GPU")
        else:
            _set(g, fname, nv.query("nvmlDeviceGetTotalEccErrors", h, etype, ctype), int)
    # SRAM (on-chip) corrected errors separately: health checks hold SRAM to a far lower limit than DRAM.
    for fname, ctype in (
        ("ecc_errors_corrected_sram_volatile", VOLATILE_ECC),
        ("ecc_errors_corrected_sram_aggregate", AGGREGATE_ECC),
    ):
        if ecc_on is False:
            g.missing(fname, "ECC is disabled on this GPU")
        else:
            _set(
                g,
                fname,
                nv.query("nvmlDeviceGetMemoryErrorCounter", h, MEMORY_ERROR_CORRECTED, ctype, MEMORY_LOCATION_SRAM),
                int,
            )
    _set(g, "retired_pages_single_bit", nv.query("nvmlDeviceGetRetiredPages", h, RETIRED_SINGLE_BIT), len)
    _set(g, "retired_pages_double_bit", nv.query("nvmlDeviceGetRetiredPages", h, RETIRED_DOUBLE_BIT), len)
    _set(g, "retired_pages_pending", nv.query("nvmlDeviceGetRetiredPagesPendingStatus", h), bool)
    rows = nv.query("nvmlDeviceGetRemappedRows", h)
    for i, fname in enumerate(
        ("remapped_rows_correctable", "remapped_rows_uncorrectable", "remapped_rows_pending", "remapped_rows_failure")
    ):
        _set(g, fname, rows, functools.partial(_pick, i=i, as_type=int if i < 2 else bool))
    mask = nv.first(["nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"], h)
    _set(g, "clocks_event_reasons", mask, lambda m: [n for bit, n in CLOCKS_EVENT_REASONS.items() if int(m) & bit])
    _set(g, "performance_state", nv.query("nvmlDeviceGetPerformanceState", h), int)
    _set(g, "persistence_mode", nv.query("nvmlDeviceGetPersistenceMode", h), bool)
    _set(g, "mig_mode", nv.query("nvmlDeviceGetMigMode", h), lambda v: bool(v[0]))
    numa = nv.query("nvmlDeviceGetNumaNodeId", h)
    if not isinstance(numa, Missing) and int(numa) < 0:
        numa = Missing("NVML reports no NUMA node (-1)")
    _set(g, "numa_node", numa, int)
    # 64-bit words; 4 words cover 256 CPUs, enough for today's two-socket hosts.
    _set(g, "cpu_affinity", nv.query("nvmlDeviceGetCpuAffinity", h, 16), cpulist_from_masks)
    g.pcie = _probe_pcie(nv, h)
    _probe_nvlinks(nv, h, g)
    return g


def probe_gpus(nv: Nvml, problems: list[str]) -> tuple[list[Gpu], list[Any]]:
    """Every GPU NVML sees, each read in its own try; returns the GPUs and their handles (None if lost)."""
    count = nv.query("nvmlDeviceGetCount")
    if isinstance(count, Missing):
        problems.append(f"NVML could not count GPUs: {count.reason}")
        return [], []
    gpus: list[Gpu] = []
    handles: list[Any] = []
    for i in range(int(count)):
        h = nv.query("nvmlDeviceGetHandleByIndex", i)
        if isinstance(h, Missing):
            g = Gpu(index=i)
            g.unavailable["*"] = h.reason
            problems.append(f"GPU {i}: NVML gave no handle ({h.reason}); its facts are missing")
            gpus.append(g)
            handles.append(None)
            continue
        try:
            gpus.append(probe_gpu(nv, i, h))
        except Exception as e:  # one bad GPU stays one bad row
            g = Gpu(index=i)
            g.unavailable["*"] = f"probe failed: {e.__class__.__name__}: {e}"
            problems.append(f"GPU {i}: probe failed ({e.__class__.__name__}: {e})")
            gpus.append(g)
        handles.append(h)
    return gpus, handles


def probe_pairs(
    nv: Nvml, gpus: list[Gpu], handles: list[Any]
) -> tuple[list[list[str | None]], list[list[str]] | None, list[list[str]] | None, str | None]:
    """PCIe topology level and P2P read/write status for every pair (None where NVML could not tell)."""
    n = len(gpus)
    levels: list[list[str | None]] = [["X" if i == j else None for j in range(n)] for i in range(n)]
    p2p: dict[int, list[list[str]]] = {}
    reason: str | None = None
    for caps in (P2P_CAPS_INDEX_READ, P2P_CAPS_INDEX_WRITE):
        p2p[caps] = [["X" if i == j else "U" for j in range(n)] for i in range(n)]
    for i in range(n):
        for j in range(n):
            if i == j or handles[i] is None or handles[j] is None:
                continue
            lvl = nv.query("nvmlDeviceGetTopologyCommonAncestor", handles[i], handles[j])
            if isinstance(lvl, Missing):
                reason = lvl.reason
            else:
                levels[i][j] = TOPOLOGY_LEVELS.get(int(lvl), "SYS")
            for caps in p2p:
                st = nv.query("nvmlDeviceGetP2PStatus", handles[i], handles[j], caps)
                if isinstance(st, Missing):
                    reason = reason or st.reason
                else:
                    p2p[caps][i][j] = P2P_STATUS.get(int(st), "U")
    return levels, (p2p[0] if n else None), (p2p[1] if n else None), reason


def _pick(v: Any, i: int, as_type: type) -> Any:
    """Element ``i`` of an NVML tuple result, as ``as_type``."""
    return as_type(v[i])
