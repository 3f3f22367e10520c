"""The simulated NVML must be called exactly as nvidia-ml-py is, or the probe's calls pass under simulation and
fail on a real GPU. The fabric probe did that: it called ``nvmlDeviceGetGpuFabricInfo(handle)``, which the
simulator answered, while the real binding takes a structure to fill (seen on an H100, driver 580: "missing 1
required positional argument: 'gpuFabricInfo'")."""

from __future__ import annotations

import ctypes
import inspect
from types import SimpleNamespace
from typing import Any

import pynvml
from gpuadvisor.probes.fabric import probe_fabric
from gpuadvisor.probes.nvml import Nvml
from gpuadvisor.probes.simnvml import SimNvml

from gpuadvisor import facts


def _required(fn: Any, skip_self: bool) -> list[str]:
    params = list(inspect.signature(fn).parameters.values())[1 if skip_self else 0 :]
    return [p.name for p in params if p.default is inspect.Parameter.empty and p.kind is p.POSITIONAL_OR_KEYWORD]


def test_every_simulated_nvml_function_takes_the_real_bindings_arguments() -> None:
    names = [n for n, _ in inspect.getmembers(SimNvml, inspect.isfunction) if n.startswith("nvml")]
    assert len(names) > 30
    for name in names:
        real = getattr(pynvml, name, None)
        assert real is not None, f"{name} is not in nvidia-ml-py"
        assert len(_required(getattr(SimNvml, name), True)) == len(_required(real, False)), name
    # the structures the probe allocates are the binding's own
    assert SimNvml.c_nvmlGpuFabricInfoV_t is pynvml.c_nvmlGpuFabricInfoV_t


class _OldBinding:
    """A binding and driver without the V form (nvidia-ml-py before 12.550): only the first structure."""

    c_nvmlGpuFabricInfo_t = pynvml.c_nvmlGpuFabricInfo_t

    def __init__(self) -> None:
        self.calls: list[str] = []

    def nvmlDeviceGetGpuFabricInfo(self, device: Any, gpuFabricInfo: Any) -> int:
        self.calls.append("old")
        info = gpuFabricInfo._obj
        info.state, info.status, info.cliqueId = 3, 0, 7
        return 0


def test_the_fabric_probe_fills_a_structure_and_falls_back_to_the_old_call() -> None:
    lib = _OldBinding()
    (gf,) = probe_fabric(Nvml(lib), [SimpleNamespace()], [0])
    assert lib.calls == ["old"]
    assert (gf.state, gf.status, gf.clique_id) == ("completed", "success", 7)
    assert gf.degraded_bandwidth is None
    assert gf.unavailable["degraded_bandwidth"].startswith("not reported by this driver")


class _NotSupported:
    c_nvmlGpuFabricInfoV_t = pynvml.c_nvmlGpuFabricInfoV_t
    c_nvmlGpuFabricInfo_t = pynvml.c_nvmlGpuFabricInfo_t

    def nvmlDeviceGetGpuFabricInfoV(self, device: Any, gpuFabricInfo: Any) -> int:
        assert isinstance(gpuFabricInfo, type(ctypes.byref(ctypes.c_int())))  # passed by reference
        raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)


def test_a_gpu_without_a_fabric_is_not_supported_with_no_second_try() -> None:
    (gf,) = probe_fabric(Nvml(_NotSupported()), [SimpleNamespace()], [0])
    assert gf.state is None
    assert gf.unavailable["state"] == facts.NOT_SUPPORTED


def test_the_cluster_uuid_of_the_real_structure_is_text() -> None:
    """nvidia-ml-py's structure holds the UUID as a ctypes array of 16 bytes (an H100 printed its repr)."""
    from gpuadvisor.probes.fabric import _uuid_text

    info = pynvml.c_nvmlGpuFabricInfoV_t()
    assert _uuid_text(info.clusterUuid) is None  # all zeros: no cluster
    for i, b in enumerate(bytes.fromhex("0123456789abcdef0011223344556677")):
        info.clusterUuid[i] = b
    assert _uuid_text(info.clusterUuid) == "01234567-89ab-cdef-0011-223344556677"
