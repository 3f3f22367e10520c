"""llama.cpp and Ollama split whole layers across GPUs (no tensor parallelism): the advice and the plan name the
split, never "TP=" (llama.cpp's --split-mode layer, its default: github.com/ggml-org/llama.cpp, tools/main README)."""

from __future__ import annotations

import pytest

from gpuadvisor.advisor import advise
from gpuadvisor.advisor.workload import Workload
from gpuadvisor.collect import simulate


@pytest.mark.parametrize("engine", ["llamacpp", "ollama"])
def test_a_layer_split_is_named_as_one(engine):
    w = Workload.from_options(model="llama-3-70b", task="inference", engine=engine, weights="awq-4bit", context=8192)
    two = advise(simulate("2x3090-nvlink"), w)
    assert two.pick_name == "layer split over 2 GPUs"
    assert all("TP=" not in c.name for c in two.candidates)
    one = advise(simulate("h100-pcie"), w)
    assert one.pick_name == "one GPU"
    # attention heads dividing by the GPU count is a tensor-parallel limit: a layer split has none
    assert not any("attention heads" in e.reason for e in two.excluded)
