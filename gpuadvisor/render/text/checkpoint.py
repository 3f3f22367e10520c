"""The checkpoint and data-loader lines of ``advise`` (text): the plan made by gpuadvisor.advisor.checkpoint."""

from __future__ import annotations

from gpuadvisor.advice_model import CheckpointPlan
from gpuadvisor.render.text.width import fit_line, term_width

GiB = 2**30


def render_text(plan: CheckpointPlan, width: int | None = None) -> str:
    """The checkpoint and data-loader lines of the advice (plain text, fits ``width``, default the terminal's)."""
    width = width or term_width()

    lines = ["Checkpoints and data"]
    body = [
        f"checkpoint: {plan.total_bytes / GiB:,.1f} GiB ({plan.trained_params / 1e9:.2f}B params x "
        f"{plan.bytes_per_param:g} B: {plan.contents}); weights-only bf16 export "
        f"{plan.weights_only_bytes / GiB:,.1f} GiB",
        f"save: {plan.save_seconds:,.0f} s per checkpoint ({plan.writers}) at {plan.write_gbps:g} GB/s, "
        f"{plan.write_source}" + (" [assumed]" if plan.write_provenance == "assumed" else ""),
        f"stall: {plan.stall_fraction:.1%} of training time, {plan.interval_source}; a consolidated torch.save on "
        f"rank 0 takes {plan.consolidated_save_seconds:,.0f} s and stages {plan.host_ram_needed_bytes / GiB:,.0f} GiB "
        "in its host RAM",
    ]
    if plan.free_bytes is not None:
        body.append(
            f"space: {plan.free_bytes / GiB:,.0f} GiB free on {plan.free_path}: room for "
            f"{plan.free_bytes // max(plan.total_bytes, 1)} checkpoint(s)"
        )
    if plan.data_read_needed_gbps is not None:
        measured = (
            f"measured {plan.data_read_measured_gbps:g} GB/s ({plan.data_read_source})"
            if plan.data_read_measured_gbps
            else plan.data_read_source or ""
        )
        body.append(f"data loader: needs {plan.data_read_needed_gbps * 1000:.3g} MB/s; {measured}")
    body += plan.notes
    for text in body:
        lines += fit_line("  " + text, width, hang=2)
    return "\n".join(lines) + "\n"
