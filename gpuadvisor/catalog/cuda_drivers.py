"""The newest CUDA version an NVIDIA driver supports, from its version number.

NVIDIA's CUDA Toolkit release notes, Table 3 "CUDA Toolkit and Corresponding Driver Versions"
(docs.nvidia.com/cuda/cuda-toolkit-release-notes/): each toolkit ships with a driver branch (418 for CUDA 10.1,
535 for 12.2 ...), and a driver of that branch reports that CUDA version (nvidia-smi's "CUDA Version"), as the
real nvidia-smi banners of this project's corpus show. Used where a paste shows the driver but not its CUDA
version (torch's collect_env prints only "Nvidia driver version"). A container with NVIDIA's forward-compatibility
package reports the package's newer CUDA instead.
"""

from __future__ import annotations

import re

# (driver branch, CUDA version), oldest first: the branch of each toolkit's GA driver; a driver of that branch or a
# later one (up to the next entry's) reports that CUDA version
BRANCHES: tuple[tuple[int, str], ...] = (
    (375, "8.0"),
    (384, "9.0"),
    (390, "9.1"),
    (396, "9.2"),
    (410, "10.0"),
    (418, "10.1"),
    (440, "10.2"),
    (450, "11.0"),
    (455, "11.1"),
    (460, "11.2"),
    (465, "11.3"),
    (470, "11.4"),
    (495, "11.5"),
    (510, "11.6"),
    (515, "11.7"),
    (520, "11.8"),
    (525, "12.0"),
    (530, "12.1"),
    (535, "12.2"),
    (545, "12.3"),
    (550, "12.4"),
    (555, "12.5"),
    (560, "12.6"),
    (565, "12.7"),
    (570, "12.8"),
    (575, "12.9"),
    (580, "13.0"),
    (590, "13.1"),
    (595, "13.2"),
)
SOURCE = "CUDA Toolkit release notes, Table 3 (the driver branch of each CUDA version)"


def cuda_for_driver(driver: str | None) -> str | None:
    """The CUDA version a driver (e.g. "418.67") reports; None for a version not of that form, older than CUDA
    8.0's branch, or newer than the last branch listed (a later CUDA may have come with it)."""
    if driver is None or not re.fullmatch(r"\d{3}\.\d+(?:\.\d+)?", driver):
        return None
    branch = int(driver.split(".")[0])
    if branch >= BRANCHES[-1][0] + 5:
        return None
    found = None
    for first, cuda in BRANCHES:
        if branch >= first:
            found = cuda
    return found
