"""gpuadvisor: the truth about a multi-GPU machine, and how to train on it."""

__version__ = "0.1.0"
