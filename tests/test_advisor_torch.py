"""A real measurement: small transformers trained one step on CPU; the bytes of their parameters, gradients
and optimizer states, counted from the tensors torch allocated, equal the advisor's model-state prediction.

Accounting that matches what torch allocates: an fp32 model (4 bytes/param), fp32 gradients (4), and
torch.optim.AdamW's exp_avg + exp_avg_sq in fp32 (8) plus one 0-dim fp32 'step' tensor per parameter tensor
(constants.ADAMW.per_tensor = 4): 16 bytes/param + 4 bytes/tensor. SGD with momentum: one fp32 buffer (4).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from gpuadvisor.advisor import constants as C  # noqa: E402
from gpuadvisor.advisor.architecture import Architecture  # noqa: E402
from gpuadvisor.advisor.memory import Layout, model_states  # noqa: E402
from gpuadvisor.advisor.workload import Workload  # noqa: E402


class Block(nn.Module):
    def __init__(self, a: Architecture) -> None:
        super().__init__()
        h = a.hidden
        norm = (lambda: nn.LayerNorm(h)) if a.norm == "layernorm" else (lambda: nn.RMSNorm(h))
        qkv_bias = a.bias or a.attention_bias
        self.a = a
        self.norm1 = norm()
        self.q = nn.Linear(h, a.q_dim, bias=qkv_bias)
        self.k = nn.Linear(h, a.kv_dim, bias=qkv_bias)
        self.v = nn.Linear(h, a.kv_dim, bias=qkv_bias)
        self.o = nn.Linear(a.q_dim, h, bias=a.bias)
        self.norm2 = norm()
        if a.mlp == "gated":
            self.gate = nn.Linear(h, a.intermediate, bias=a.bias)
        self.up = nn.Linear(h, a.intermediate, bias=a.bias)
        self.down = nn.Linear(a.intermediate, h, bias=a.bias)

    def forward(self, x):  # type: ignore[no-untyped-def]
        a = self.a
        b, s, _ = x.shape
        y = self.norm1(x)
        q = self.q(y).view(b, s, a.heads, a.head_dim).transpose(1, 2)
        k = self.k(y).view(b, s, a.kv_heads, a.head_dim).transpose(1, 2)
        v = self.v(y).view(b, s, a.kv_heads, a.head_dim).transpose(1, 2)
        rep = a.heads // a.kv_heads
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        att = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(att.transpose(1, 2).reshape(b, s, a.q_dim))
        y = self.norm2(x)
        mlp = nn.functional.silu(self.gate(y)) * self.up(y) if a.mlp == "gated" else nn.functional.gelu(self.up(y))
        return x + self.down(mlp)


class TinyLM(nn.Module):
    def __init__(self, a: Architecture) -> None:
        super().__init__()
        self.embed = nn.Embedding(a.vocab, a.hidden)
        self.pos = nn.Embedding(a.max_positions, a.hidden) if a.learned_positions else None
        self.layers = nn.ModuleList(Block(a) for _ in range(a.layers))
        self.norm = nn.LayerNorm(a.hidden) if a.norm == "layernorm" else nn.RMSNorm(a.hidden)
        self.head = nn.Linear(a.hidden, a.vocab, bias=False)
        if a.tied_embeddings:
            self.head.weight = self.embed.weight

    def forward(self, ids):  # type: ignore[no-untyped-def]
        x = self.embed(ids)
        if self.pos is not None:
            x = x + self.pos(torch.arange(ids.shape[1]))
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x))


LLAMA_LIKE = Architecture(
    name="tiny-llama",
    hidden=64,
    layers=3,
    heads=4,
    kv_heads=2,
    intermediate=176,
    vocab=1000,
    head_dim=16,
    max_positions=64,
    tied_embeddings=False,
    mlp="gated",
    norm="rmsnorm",
)
QWEN_LIKE = Architecture(
    name="tiny-qwen",
    hidden=48,
    layers=2,
    heads=6,
    kv_heads=2,
    intermediate=128,
    vocab=700,
    head_dim=8,
    max_positions=64,
    tied_embeddings=False,
    attention_bias=True,
)
GPT2_LIKE = Architecture(
    name="tiny-gpt2",
    hidden=32,
    layers=2,
    heads=4,
    kv_heads=4,
    intermediate=128,
    vocab=500,
    head_dim=8,
    max_positions=32,
    tied_embeddings=True,
    mlp="plain",
    norm="layernorm",
    bias=True,
    learned_positions=True,
)


def tensor_bytes(tensors) -> int:  # type: ignore[no-untyped-def]
    return sum(t.numel() * t.element_size() for t in tensors)


def train_one_step(arch: Architecture, optimizer: str):  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    model = TinyLM(arch)
    opt = (
        torch.optim.AdamW(model.parameters(), lr=1e-3)
        if optimizer == "adamw"
        else torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    )
    ids = torch.randint(0, arch.vocab, (2, 16))
    logits = model(ids[:, :-1])
    loss = nn.functional.cross_entropy(logits.reshape(-1, arch.vocab), ids[:, 1:].reshape(-1))
    loss.backward()
    opt.step()
    params = list(model.parameters())  # shared (tied) tensors once, as torch allocates them
    measured = {
        "params": tensor_bytes(params),
        "grads": tensor_bytes(p.grad for p in params),
        "optimizer": tensor_bytes(t for st in opt.state.values() for t in st.values() if torch.is_tensor(t)),
        "count": sum(p.numel() for p in params),
        "tensors": len(params),
    }
    return measured, opt


@pytest.mark.parametrize("arch", [LLAMA_LIKE, QWEN_LIKE, GPT2_LIKE], ids=lambda a: a.name)
@pytest.mark.parametrize("optimizer", ["adamw", "sgd"])
def test_model_states_equal_what_torch_allocates(arch: Architecture, optimizer: str) -> None:
    measured, opt = train_one_step(arch, optimizer)
    assert measured["count"] == arch.counted_params()
    assert measured["tensors"] == arch.param_tensors()
    w = Workload(arch=arch, precision="fp32", optimizer=optimizer)
    weights, grads, optim = model_states(w, Layout("single", "single GPU", "PyTorch", 0, dp=1))
    assert weights == measured["params"]
    assert grads == measured["grads"]
    assert optim == measured["optimizer"]
    if optimizer == "adamw":
        # 16 bytes/param + one fp32 step counter per tensor: the accounting stated in the module docstring.
        assert (
            measured["params"] + measured["grads"] + measured["optimizer"]
            == 16 * measured["count"] + 4 * measured["tensors"]
        )
        assert {k for st in opt.state.values() for k in st} == {"step", "exp_avg", "exp_avg_sq"}
    else:
        assert measured["optimizer"] == C.SGD_MOMENTUM.states * measured["count"]


def test_sharded_states_sum_to_the_unsharded_ones() -> None:
    """ZeRO-3 over N GPUs holds exactly 1/N of every model state the single GPU holds."""
    w = Workload(arch=LLAMA_LIKE, precision="fp32")
    single = model_states(w, Layout("single", "single GPU", "PyTorch", 0, dp=1))
    sharded = model_states(w, Layout("zero3", "ZeRO-3", "FSDP", 3, dp=4, zero_stage=3, shard_group=4))
    assert [4 * s for s in sharded] == pytest.approx(list(single), rel=1e-12)
