"""Probes: collect facts from the live machine (NVML, sysfs, psutil, software) — and the simulated NVML that
serves the same pynvml calls from a rig description. Installed as ``gpuadvisor.probes``."""
