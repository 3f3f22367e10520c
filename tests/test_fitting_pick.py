"""advisor.fitting_pick (the pick alone, for plan's "with more RAM" question) names what advise() picks, fitting or
not, for training and serving on real preset rigs."""

from __future__ import annotations

import pytest

from gpuadvisor.advisor import advise
from gpuadvisor.advisor.advice import fitting_pick
from gpuadvisor.advisor.workload import Workload
from gpuadvisor.collect import simulate


@pytest.mark.parametrize("preset", ["dgx-h100", "4x4090-pcie", "2x3090-nvlink", "h100-pcie"])
@pytest.mark.parametrize(
    "options",
    [
        {"model": "llama-3-70b", "task": "train"},
        {"model": "llama-3-8b", "task": "train", "finetune": "full"},
        {"model": "llama-3-70b", "task": "train", "finetune": "qlora"},
        {"model": "llama-3-70b", "task": "inference"},
    ],
    ids=["70b-train", "8b-full", "70b-qlora", "70b-serve"],
)
def test_the_pick_alone_is_advises_pick(preset, options):
    w = Workload.from_options(**options)
    assert fitting_pick(simulate(preset), w) == advise(simulate(preset), w).pick_name


def test_a_rig_short_of_host_ram_fits_once_given_more():
    """70B full fine-tuning on 4x 4090 needs CPU offload: nothing fits with the preset's RAM, a pick with 2 TiB."""
    w = Workload.from_options(model="llama-3-70b", task="train", finetune="full")
    rig = simulate("4x4090-pcie")
    assert fitting_pick(rig, w) is None
    rig.host.memory_total_bytes = 2 * 2**40
    assert fitting_pick(rig, w) is not None
