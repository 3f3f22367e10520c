"""Text renderings: what the terminal and CI logs show (the rig, findings, advice, benchmarks, plan, fleet)."""
