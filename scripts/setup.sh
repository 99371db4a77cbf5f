#!/usr/bin/env bash
# Creates .venv with everything the project needs:  scripts/setup.sh [--test]
# Here (no GPU) it installs the CPU build of PyTorch 2.13.0. Where the system Python already has a CUDA build of
# PyTorch (an NGC container, say), the venv sees the system packages so that build is kept, not replaced.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}

if [ ! -x .venv/bin/python ]; then
    if "$PYTHON" -c "import sys, torch; sys.exit(0 if torch.version.cuda else 1)" 2>/dev/null; then
        echo "setup: keeping the system's CUDA build of PyTorch"
        "$PYTHON" -m venv --system-site-packages .venv
    else
        "$PYTHON" -m venv .venv
    fi
fi
# shellcheck disable=SC1091
. .venv/bin/activate
if ! python -c "import torch" 2>/dev/null; then
    pip install -q "torch==2.13.0"
fi
pip install -q -r requirements.txt
pip install -q --no-deps -r requirements-nodeps.txt
if [ "${1:-}" = "--test" ]; then
    pip install -q -r requirements-test.txt
fi
python -c "import torch; print('setup: torch', torch.__version__, '| CUDA available:', torch.cuda.is_available())"
