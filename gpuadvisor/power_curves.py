"""What a GPU power cap (``nvidia-smi -pl``) costs in speed, by workload kind, from published sweeps.

Two kinds: ``compute`` (training and prompt prefill: matrix multiplies, clock-bound, so speed falls with the
cap) and ``decode`` (one-stream token writing: it streams the weights from memory each token, so the cores idle
on memory and a cap costs little until it bites deep). Each published sweep is a ``Sweep``: its points are the
speed at a fraction of that card's full power limit, as a fraction of its speed at full power, with the URL,
GPU and workload.

The curve of a kind is fitted on its sweeps without a model form: at a power fraction it is the mean, over the
publications whose sweeps measured down to that fraction, of each publication's mean over its sweeps (each
interpolated linearly between its own points, 1.0 at full power); where fewer than two publications reach, it
predicts nothing. A GPU class (``geforce``, ``datacenter``) gets its own curve where two publications of its own
class reach the fraction, else the pooled curve of the kind (data-centre sweeps: Zeus's V100, A40 and P100 for
training, one H200 paper for decode, so they join the pool). ``held_out_errors`` refits without each publication
in turn and compares with its points (tests print them).

Never fitted on (held out by the plan's held-out questions): the club-3090 project's issue threads and Latif
et al. 2024 (arXiv 2412.08602).
"""

from __future__ import annotations

from dataclasses import dataclass

COMPUTE = "compute"
DECODE = "decode"
MIN_SOURCES = 2  # publications whose sweeps must reach a power fraction for the curve to predict there
# The power trace of Zeus (Chung et al., NSDI '23): time per training epoch at every power limit, several GPUs
ZEUS = "https://github.com/ml-energy/zeus/tree/master/examples/research_reproducibility/zeus_nsdi23/trace"


@dataclass(frozen=True)
class Sweep:
    """One published power-limit sweep: (fraction of full power, fraction of full-power speed) points."""

    kind: str
    gpu: str
    gpu_class: str | None  # geforce | datacenter | None (not named)
    workload: str
    url: str
    points: tuple[tuple[float, float], ...]

    @property
    def lowest(self) -> float:
        return min(p for p, _ in self.points)

    def at(self, fraction: float) -> float | None:
        """This sweep's speed at ``fraction`` (linear between its points, 1.0 at full power); None below it."""
        if fraction >= 1.0:
            return 1.0
        pts = sorted(((1.0, 1.0), *self.points), reverse=True)
        for (p0, s0), (p1, s1) in zip(pts, pts[1:], strict=False):
            if p1 <= fraction <= p0:
                return s1 + (s0 - s1) * (fraction - p1) / (p0 - p1) if p0 > p1 else s1
        return None


def _zeus(gpu: str, gpu_class: str | None, full_w: float, speed_at_w: dict[int, float]) -> Sweep:
    """One GPU of the Zeus power trace (BERT-base fine-tuning on SQuAD, time per epoch)."""
    return Sweep(
        COMPUTE,
        f"{gpu} ({full_w:g} W)",
        gpu_class,
        "BERT-base fine-tuning on SQuAD, time per epoch, median over batch sizes and optimizers (Zeus, NSDI '23 "
        "power trace)",
        ZEUS,
        tuple((w / full_w, v) for w, v in speed_at_w.items()),
    )


SWEEPS: tuple[Sweep, ...] = (
    # -- compute-bound: training, prompt prefill --------------------------------------------------------------------
    Sweep(
        COMPUTE,
        "RTX 3090 (480 W limit card)",
        "geforce",
        "ViT-B/16 training, TF32: 95 % at 320 W, 90 % at 280 W, 80 % at 230 W",
        "https://blog.qwertyforce.dev/posts/optimal_power_limit",
        ((320 / 480, 0.95), (280 / 480, 0.90), (230 / 480, 0.80)),
    ),
    Sweep(
        COMPUTE,
        "6x RTX 3090 (350 W)",
        "geforce",
        "llama.cpp prefill at 198K context: 9,893 tok/s at 350 W; 9,326 at 300; 8,436 at 250; 5,941 at 200; "
        "2,549 at 150 (LLM Garage, 2026-02)",
        "https://llmgarage.ai/power-limit-tokens-per-second-benchmark",
        ((300 / 350, 9326 / 9893), (250 / 350, 8436 / 9893), (200 / 350, 5941 / 9893), (150 / 350, 2549 / 9893)),
    ),
    Sweep(
        COMPUTE,
        "4x RTX 3090 (350 W)",
        "geforce",
        "TensorFlow training (Puget Systems, D. Kinghorn, 2020-11-13): over 95 % of full performance at 280 W",
        "https://www.pugetsystems.com/labs/hpc/quad-rtx3090-gpu-wattage-limited-maxq-tensorflow-performance-1974/",
        ((280 / 350, 0.95),),
    ),
    Sweep(
        COMPUTE,
        "RTX 3090 (366 W)",
        "geforce",
        "CMU LTI Babel cluster wiki, GPU power limits vs efficiency: about 5 % lost from 366 W to 270-280 W",
        "https://wiki.babel.cs.cmu.edu/index.php?oldid=157&title=Efficiency",
        ((275 / 366, 0.95),),
    ),
    Sweep(
        COMPUTE,
        "RTX 3090 Ti (450 W)",
        "geforce",
        "Igor's Lab, 4K games (shader-bound), as reported by PC Gamer: 107.4 fps at stock, 96.3 fps at 300 W",
        "https://www.pcgamer.com/uk/an-rtx-3090-ti-set-to-a-300w-limit-still-beats-amds-best/",
        ((300 / 450, 96.3 / 107.4),),
    ),
    # Zeus power trace, BERT-base fine-tuning on SQuAD: watts -> time-per-epoch speed, medians over the trace's
    # batch sizes and optimizers (full power: the highest limit in the trace)
    _zeus("V100", "datacenter", 250, {100: 0.499, 125: 0.653, 150: 0.804, 175: 0.894, 200: 0.937, 225: 0.976}),
    _zeus(
        "A40",
        "datacenter",
        300,
        {100: 0.250, 125: 0.383, 150: 0.575, 175: 0.771, 200: 0.903, 225: 0.950, 250: 0.976, 275: 0.995},
    ),
    _zeus("P100", "datacenter", 250, {125: 0.874, 150: 0.935, 175: 0.984, 200: 0.999, 225: 1.0}),
    _zeus(
        "Quadro RTX 6000",
        None,
        260,
        {100: 0.379, 125: 0.645, 150: 0.783, 175: 0.865, 200: 0.926, 225: 0.963, 250: 0.991},
    ),
    # -- memory-bound: one-stream decode ----------------------------------------------------------------------------
    Sweep(
        DECODE,
        "6x RTX 3090 (350 W)",
        "geforce",
        "llama.cpp decode at 4K context: 72.6 tok/s at 350 W; 72.1 at 300; 70.7 at 250; 68.3 at 200; 62.6 at 150; "
        "12.1 at 100 (LLM Garage, 2026-02)",
        "https://llmgarage.ai/power-limit-tokens-per-second-benchmark",
        ((300 / 350, 72.1 / 72.6), (250 / 350, 70.7 / 72.6), (200 / 350, 68.3 / 72.6), (150 / 350, 62.6 / 72.6)),
    ),
    Sweep(
        DECODE,
        "RTX 5060 Ti (180 W)",
        "geforce",
        "llama.cpp, Qwen2.5-Coder-7B: 81.2 tok/s at 180 W, 81.4 at 162 W, 80.4 at 150 W (InventiveHQ)",
        "https://inventivehq.com/blog/gpu-power-limit-tokens-per-watt",
        ((162 / 180, 1.0), (150 / 180, 80.4 / 81.2)),
    ),
    Sweep(
        DECODE,
        "RTX 5090 (600 W)",
        "geforce",
        "llama.cpp b10451, Qwen3.8-27B Q4, one stream, no speculative decoding: 74.8 tok/s at 600 and 550 W, 74.5 at "
        "500, 73.5 at 450, 71.2 at 400 W (the card's floor)",
        "https://github.com/sudoingX/qwen38-mtp/pull/47",
        ((550 / 600, 1.0), (500 / 600, 74.5 / 74.8), (450 / 600, 73.5 / 74.8), (400 / 600, 71.2 / 74.8)),
    ),
    Sweep(
        DECODE,
        "RTX 3090 (350 W)",
        "geforce",
        "llama.cpp (llama-swap), Qwen 3.6 27B, 4,000-token essay: under 1 % lost at 280 W",
        "https://jeanfbrito.github.io/posts/rtx-3090-power-limit-sweet-spot/",
        ((280 / 350, 0.99),),
    ),
    Sweep(
        DECODE,
        "GPUs not named in the summary",
        None,
        "llama.cpp token generation (J. Mattheij): about 2/3 of maximum power without a speed penalty",
        "https://jacquesmattheij.com/llama-energy-efficiency/",
        ((2 / 3, 1.0),),
    ),
    Sweep(
        DECODE,
        "H200 (700 W)",
        "datacenter",
        "autoregressive decode draws 137-300 W whatever the cap, so a cap of 300 W or more never binds "
        "(arXiv 2605.11999, 'The Illusion of Power Capping in LLM Decode')",
        "https://arxiv.org/abs/2605.11999",
        ((300 / 700, 1.0),),
    ),
)


def _sweeps(kind: str, gpu_class: str | None, without: str | None) -> list[Sweep]:
    return [
        s for s in SWEEPS if s.kind == kind and s.url != without and (gpu_class is None or s.gpu_class == gpu_class)
    ]


def _mean_at(sweeps: list[Sweep], fraction: float, least: int = MIN_SOURCES) -> tuple[float | None, list[Sweep]]:
    """The mean over publications of each one's mean over its sweeps that reach ``fraction``; None where fewer than
    ``least`` publications reach it."""
    by_source: dict[str, list[tuple[Sweep, float]]] = {}
    for s in sweeps:
        v = s.at(fraction)
        if v is not None:
            by_source.setdefault(s.url, []).append((s, v))
    if len(by_source) < least:
        return None, []
    means = [sum(v for _, v in pairs) / len(pairs) for pairs in by_source.values()]
    return sum(means) / len(means), [s for pairs in by_source.values() for s, _ in pairs]


def capped_speed_of(
    kind: str, fraction: float, gpu_class: str | None = None, without: str | None = None
) -> tuple[float | None, list[Sweep]]:
    """The speed at a cap of ``fraction`` of full power, as a fraction of full speed, and the sweeps it rests on:
    the class's own publications where two reach, else every publication of the kind (None: fewer than two reach).
    ``without``: a publication's URL left out (the held-out check)."""
    if fraction >= 1.0:
        return 1.0, []
    if gpu_class is not None:
        own, used = _mean_at(_sweeps(kind, gpu_class, without), fraction)
        if own is not None:
            return own, used
    return _mean_at(_sweeps(kind, None, without), fraction)


def held_out_errors(kind: str, least: int = MIN_SOURCES) -> dict[str, list[float]]:
    """For each publication of the kind, predicted / measured at each point of its sweeps from the curve refitted
    without it, where ``least`` of the other publications reach (1: also where the curve would rest on one)."""
    out: dict[str, list[float]] = {}
    for url in dict.fromkeys(s.url for s in _sweeps(kind, None, None)):
        ratios = []
        for s in _sweeps(kind, None, None):
            if s.url != url:
                continue
            for p, v in s.points:
                pred, _ = _mean_at(_sweeps(kind, None, url), p, least)
                if pred is not None:
                    ratios.append(pred / v)
        out[url] = ratios
    return out


def spread(kind: str, fraction: float, used: list[Sweep]) -> tuple[float, float]:
    """The lowest and highest speed the sweeps of ``kind`` among ``used`` measured at ``fraction``."""
    vals = [v for s in used if s.kind == kind and (v := s.at(fraction)) is not None] or [1.0]
    return min(vals), max(vals)


def sources(used: list[Sweep]) -> list[str]:
    """The publications behind a prediction, each as the GPUs of its sweeps used and its URL."""
    gpus: dict[str, list[str]] = {}
    for s in used:
        if s.gpu not in gpus.setdefault(s.url, []):
            gpus[s.url].append(s.gpu)
    return [f"{', '.join(g)} ({url})" for url, g in gpus.items()]
