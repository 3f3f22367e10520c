"""nvmlDeviceGetCpuAffinity's mask words to a cpulist (nvml.h: an array of unsigned longs, bit n of word w is CPU
w * 64 + n), checked against the cpulists Linux prints for the same sets."""

from __future__ import annotations

from gpuadvisor.probes.nvml import cpulist_from_masks


def test_masks_to_cpulist() -> None:
    # DGX H100 socket 0 (nvidia-smi topo -m "CPU Affinity" 0-55,112-167): CPUs 0-55, then 112-167.
    words = [(1 << 56) - 1, ((1 << 16) - 1) << 48, (1 << 40) - 1, 0]
    assert cpulist_from_masks(words) == "0-55,112-167"
    assert cpulist_from_masks([0b1011, 0]) == "0-1,3"
    assert cpulist_from_masks([0, 1 << 63]) == "127"
    assert cpulist_from_masks([0xFF], bits=4) == "0-3"  # bits past the word size are not CPUs
    assert cpulist_from_masks([]) == ""
