# Training and inference image on NVIDIA's PyTorch container (CUDA, cuDNN, NCCL and a CUDA build of PyTorch included).
#   scripts/docker/build.sh && scripts/docker/interactive.sh
ARG FROM_IMAGE=nvcr.io/nvidia/pytorch:25.10-py3
FROM ${FROM_IMAGE}
WORKDIR /workspace/speech
COPY requirements.txt requirements-lm.txt requirements-nodeps.txt requirements-test.txt ./
# The container's own torch stays: requirements.txt asks for torch>=2.6, which it satisfies.
RUN pip install --no-cache-dir -r requirements.txt -r requirements-lm.txt -r requirements-test.txt && \
    pip install --no-cache-dir --no-deps -r requirements-nodeps.txt
COPY . .
