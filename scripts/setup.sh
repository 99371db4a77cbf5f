#!/usr/bin/env bash
# Creates .venv with everything the project needs:  scripts/setup.sh [--lm] [--judge] [--test]
#   --lm    also wav2vec 2.0's CTC beam search and language-model reader (pyctcdecode; kenlm, built from source with a
#           C++ toolchain and CMake): make demo-asr and make demo-pretrain ask for it; text-to-speech needs neither
#   --judge also Moonshine base, the independent judge of synthesized speech (requirements-judge.txt): make demo
#   --test  also the test tools (and the --lm and --judge packages, which the tests use)
# Here (no GPU) it installs the CPU build of the PyTorch that requirements-torch.txt pins. Where the system Python
# already has a CUDA build of PyTorch 2.6 or newer (an NGC container, say), the venv sees the system packages so that
# build is kept, not replaced. A PyTorch older than 2.6 (in the venv or the system's) is replaced by the pinned one:
# before 2.6 torch.load(weights_only=True) can be bypassed by a crafted file (CVE-2025-32434), and train.py and
# inference.py refuse to start on it.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
# Exits 0 when the Python given imports a torch of 2.6 or newer (and, with "cuda", a CUDA build): what
# common/torch_version.py accepts (major.minor only, so NVIDIA's 2.6.0a0 builds count as 2.6).
TORCH_IS_RECENT='import re, sys, torch
major, minor = map(int, re.match(r"(\d+)\.(\d+)", torch.__version__).groups())
sys.exit(0 if (major, minor) >= (2, 6) and (sys.argv[1:] != ["cuda"] or torch.version.cuda) else 1)'

if [ ! -x .venv/bin/python ]; then
    if "$PYTHON" -c "$TORCH_IS_RECENT" cuda 2>/dev/null; then
        echo "setup: keeping the system's CUDA build of PyTorch"
        "$PYTHON" -m venv --system-site-packages .venv
    else
        "$PYTHON" -m venv .venv
    fi
fi
# shellcheck disable=SC1091
. .venv/bin/activate
if ! python -c "$TORCH_IS_RECENT" 2>/dev/null; then
    if python -c "import torch" 2>/dev/null; then
        old_torch=$(python -c 'import torch; print(torch.__version__)')
        echo "setup: replacing PyTorch $old_torch (older than 2.6) with $(grep '^torch==' requirements-torch.txt)"
    fi
    pip install -q -r requirements-torch.txt
fi
with_lm=false
with_judge=false
with_tests=false
for option in "$@"; do
    case "$option" in
        --lm) with_lm=true ;;
        --judge) with_judge=true ;;
        --test) with_lm=true; with_judge=true; with_tests=true ;;
        *) echo "error: scripts/setup.sh: unknown option '$option' (known: --lm, --judge, --test)" >&2; exit 2 ;;
    esac
done
pip install -q -r requirements.txt
if $with_lm; then
    pip install -q -r requirements-lm.txt
    pip install -q --no-deps -r requirements-nodeps.txt
fi
if $with_judge; then
    pip install -q -r requirements-judge.txt
fi
if $with_tests; then
    pip install -q -r requirements-test.txt
fi
python -c "import torch; print('setup: torch', torch.__version__, '| CUDA available:', torch.cuda.is_available())"
