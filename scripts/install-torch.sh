#!/bin/sh
# Install the CPU build of torch into a virtual environment (called by the Makefile).
#
#   scripts/install-torch.sh PYTHON [SPEC]      e.g. scripts/install-torch.sh .venv/bin/python torch==2.13.0
#
# A bare "pip install torch" on Linux fetches the CUDA build (several GB with its NVIDIA libraries). So: PyTorch's
# CPU wheel index first (https://pytorch.org/get-started/locally/: pip3 install torch --index-url
# https://download.pytorch.org/whl/cpu); when it cannot be reached, the default index, saying so. Either way it
# prints which build it got (torch.version.cuda is None on a CPU build). TORCH_CPU_INDEX overrides the index.
set -u
PY=${1:?usage: scripts/install-torch.sh PYTHON [SPEC]}
SPEC=${2:-torch==2.13.0}
CPU_INDEX=${TORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}

if "$PY" -m pip install -q --retries 1 --timeout 20 --index-url "$CPU_INDEX" "$SPEC"; then
  from="pip install --index-url $CPU_INDEX"
else
  echo "install-torch: CPU index unreachable ($CPU_INDEX): installing $SPEC from the default index" >&2
  "$PY" -m pip install -q "$SPEC" || { echo "install-torch: could not install $SPEC" >&2; exit 1; }
  from="the default index: CPU index unreachable"
fi

build=$("$PY" -c 'import warnings; warnings.filterwarnings("ignore"); import torch; print(torch.__version__, torch.version.cuda)') || {
  echo "install-torch: $SPEC installed but 'import torch' fails" >&2; exit 1; }
version=${build% *}
cuda=${build#* }
if [ "$cuda" = "None" ]; then
  echo "install-torch: torch $version, the CPU build ($from)"
else
  echo "install-torch: note: torch $version is a CUDA $cuda build ($from), not the CPU build: it works, but" \
       "it is large; on a machine that can reach $CPU_INDEX rerun: $PY -m pip install --force-reinstall --index-url $CPU_INDEX '$SPEC'"
fi
