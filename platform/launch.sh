#!/usr/bin/env bash
# One parametrised launcher behind every platform/<MACHINE>_<model>_<PRECISION>_<N>NGPU_train.sh file:
#   platform/launch.sh MACHINE MODEL PRECISION NGPU [extra train.py flags]
#   MACHINE: DGX1 | DGXA100 | DGXH100    MODEL: tacotron2 | waveglow | hifigan    PRECISION: AMP | BF16 | FP32 | TF32
#   (and MODEL wav2vec2-pretrain | wav2vec2-finetune: see the wav2vec 2.0 rows below)
# It launches exactly NGPU processes (scripts/launch_training.sh: torchrun for NGPU > 1). Environment overrides:
#   DATA_DIR (data/LJSpeech-1.1), OUTPUT_DIR (./output), BATCH_SIZE, GRAD_ACCUMULATION, EPOCHS, PYTHON,
#   DRY_RUN=1 prints the launch command instead of running it.
# NVIDIA's hyper-parameters come from the preset configs/<model>_nvidia.json; this file adds only what NVIDIA tuned
# per GPU and precision (the table below), the filelists and the precision flag.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 4 ]; then
    echo "usage: platform/launch.sh MACHINE MODEL PRECISION NGPU [train.py flags]" >&2
    exit 2
fi
machine=$1 model=$2 precision=$3 ngpu=$4
shift 4
DATA_DIR=${DATA_DIR:-data/LJSpeech-1.1}
OUTPUT_DIR=${OUTPUT_DIR:-./output}

case "$precision" in
    AMP) precision_flags=(--amp) ;;
    BF16) precision_flags=(--bf16) ;;
    TF32) precision_flags=(--tf32) ;;
    FP32) precision_flags=(--no-tf32) ;;
    *) echo "unknown precision '$precision' (AMP, BF16, TF32, FP32)" >&2; exit 2 ;;
esac
case "$machine" in DGX1|DGXA100|DGXH100) ;; *) echo "unknown machine '$machine'" >&2; exit 2 ;; esac
case "$ngpu" in ''|*[!0-9]*) echo "NGPU must be a number, got '$ngpu'" >&2; exit 2 ;; esac

# wav2vec 2.0 (MODEL wav2vec2-pretrain or wav2vec2-finetune; NVIDIA publishes DGX A100 runs on 1, 4 and 8 GPUs):
# scripts/wav2vec2/pretrain_wav2vec2.sh and scripts/wav2vec2/finetune_wav2vec2.sh hold the recipe and split NVIDIA's
# global batch by the GPU count, GPUs x concatenated x accumulated max-tokens batches per update:
#   pre-training (64): 1 GPU 8 x 8, 4 GPUs 8 x 2, 8 GPUs 8 x 1; fine-tuning (8): 1 GPU 8 x 1, 4 GPUs 2 x 1, 8 GPUs 1 x 1
# Their environment applies: DATA_DIR (the manifests), OUTPUT_DIR, MODEL=base|large, SUBSET=1h|10h|100h|960h,
# PRETRAINED_MODEL, NUM_CONCAT_BATCHES, UPDATE_FREQ.
case "$model" in
    wav2vec2-pretrain|wav2vec2-finetune)
        NUM_GPUS=$ngpu PRECISION=${precision,,} exec bash "scripts/wav2vec2/${model#wav2vec2-}_wav2vec2.sh" "$@" ;;
esac

case "$model" in
    tacotron2) model_flags=(-m Tacotron2 --load-mel-from-disk
                            --training-files filelists/ljs_mel_text_train_filelist.txt
                            --validation-files filelists/ljs_mel_text_val_filelist.txt) ;;
    waveglow) model_flags=(-m WaveGlow
                           --training-files filelists/ljs_audio_text_train_filelist.txt
                           --validation-files filelists/ljs_audio_text_val_filelist.txt) ;;
    hifigan) model_flags=(-m HiFiGAN
                          --training-files filelists/ljs_audio_text_train_filelist.txt
                          --validation-files filelists/ljs_audio_text_val_filelist.txt) ;;
    *) echo "unknown model '$model' (tacotron2, waveglow, hifigan)" >&2; exit 2 ;;
esac

# Where NVIDIA's platform scripts differ from the preset (which holds their fp32 values on a 16 GB V100): the
# per-GPU batch size grows with GPU memory (A100 and H100: 80 GB) and with mixed precision, and mixed precision
# anneals by 0.3 (Tacotron 2) and clips at the fp16 maximum (WaveGlow AMP). One row per difference; none for the rest.
batch="" tuned_flags=()
case "$model/$machine/$precision" in
    tacotron2/DGX1/AMP) batch=104 tuned_flags=(--anneal-factor 0.3) ;;
    tacotron2/*/AMP|tacotron2/*/BF16) batch=128 tuned_flags=(--anneal-factor 0.3) ;;
    tacotron2/DGXA100/*|tacotron2/DGXH100/*) batch=128 ;;
    waveglow/*/AMP) batch=10 tuned_flags=(--grad-clip-thresh 65504.0) ;;
    waveglow/*/BF16) batch=10 ;;
esac
# HiFi-GAN: NVIDIA's global batch of 128 on every machine, as per-GPU batch x accumulation x GPUs (DGX-1 on one
# V100: 64 x 2 with AMP, 32 x 4 in fp32; DGX A100 one GPU: 128; DGX H100, 80 GB as the A100, like the A100).
accumulation=""
if [ "$model" = hifigan ]; then
    case "$machine/$precision/$ngpu" in
        DGX1/AMP/1|DGX1/BF16/1) batch=64 accumulation=2 ;;
        DGX1/*/1) batch=32 accumulation=4 ;;
        *) batch=$((128 / ngpu)) ;;
    esac
fi
batch=${BATCH_SIZE:-$batch}
accumulation=${GRAD_ACCUMULATION:-$accumulation}
if [ -n "$batch" ]; then tuned_flags+=(-bs "$batch"); fi
if [ -n "$accumulation" ]; then tuned_flags+=(--grad-accumulation "$accumulation"); fi
if [ -n "${EPOCHS:-}" ]; then tuned_flags+=(--epochs "$EPOCHS"); fi

NUM_GPUS=$ngpu exec bash scripts/launch_training.sh "${model_flags[@]}" --config-file "configs/${model}_nvidia.json" \
    "${tuned_flags[@]}" -o "$OUTPUT_DIR" -d "$DATA_DIR" --resume-from-last "${precision_flags[@]}" "$@"
