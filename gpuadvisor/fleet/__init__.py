"""gpuadvisor fleet: one view across many nodes' scans.

The pieces, each in its own module: ``load`` (read a directory of scans, check results and failure records into
``Node``s), ``hostlist`` (Slurm hostlist expressions for --expect), ``groups`` (nodes of what the hardware
is; lost GPUs, NVLinks, NICs), ``figures`` (the measured numbers of one node, a compact table), ``noise`` (the
measured per-family noise model: family verdicts, Benjamini-Hochberg, floors, the absolute yardstick),
``verdicts`` (its findings), ``gate`` (what fails: defaults and the policy's [fleet] table), ``outliers``
(per-figure median and MAD statistics; the node-pair rule), ``drift``
(versions and modes that differ inside a group), ``cost`` (what the slowest nodes cost a synchronous job),
``pairs`` (node-pair all-reduce rounds), ``baseline`` (what changed since an earlier set of scans),
``analyse`` (all of it, into a ``FleetReport``). It reads scans through the facts model's lean load
(``gpuadvisor.facts.lean``); its text, HTML, JSON, JUnit and Prometheus renderings belong to the render layer
(a fleet module in each of its format packages), and the command's output paths to the command.
"""
