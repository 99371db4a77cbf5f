#!/usr/bin/env bash
# One parametrised launcher behind every platform/<MACHINE>_<model>_<PRECISION>_<N>NGPU_train.sh file:
#   platform/launch.sh MACHINE MODEL PRECISION NGPU [extra train.py flags]
#   MACHINE: DGX1 | DGXA100 | DGXH100    MODEL: tacotron2 | waveglow    PRECISION: AMP | BF16 | FP32 | TF32
# It launches exactly NGPU processes (scripts/launch_training.sh: torchrun for NGPU > 1). Environment overrides:
#   DATA_DIR (data/LJSpeech-1.1), OUTPUT_DIR (./output), BATCH_SIZE, EPOCHS, PYTHON,
#   DRY_RUN=1 prints the launch command instead of running it.
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

# Per-GPU batch sizes and anneal factors of NVIDIA's recipes (V100 16 GB, A100 and H100 80 GB).
case "$model" in
    tacotron2)
        case "$machine/$precision" in
            DGX1/AMP) batch=104 factor=0.3 ;;
            DGX1/*) batch=48 factor=0.1 ;;
            */AMP|*/BF16) batch=128 factor=0.3 ;;
            *) batch=128 factor=0.1 ;;
        esac
        model_flags=(-m Tacotron2 -lr 1e-3 --epochs "${EPOCHS:-1501}" --weight-decay 1e-6 --grad-clip-thresh 1.0
                     --anneal-steps 500 1000 1500 --anneal-factor "$factor" --load-mel-from-disk
                     --training-files filelists/ljs_mel_text_train_filelist.txt
                     --validation-files filelists/ljs_mel_text_val_filelist.txt)
        ;;
    waveglow)
        case "$precision" in
            AMP) batch=10 clip=65504.0 ;;
            BF16) batch=10 clip=3.4028234663852886e+38 ;;
            *) batch=4 clip=3.4028234663852886e+38 ;;
        esac
        model_flags=(-m WaveGlow -lr 1e-4 --epochs "${EPOCHS:-1001}" --segment-length 8000 --weight-decay 0
                     --grad-clip-thresh "$clip" --cudnn-benchmark
                     --training-files filelists/ljs_audio_text_train_filelist.txt
                     --validation-files filelists/ljs_audio_text_val_filelist.txt)
        ;;
    *) echo "unknown model '$model' (tacotron2, waveglow)" >&2; exit 2 ;;
esac

NUM_GPUS=$ngpu exec bash scripts/launch_training.sh "${model_flags[@]}" -bs "${BATCH_SIZE:-$batch}" -o "$OUTPUT_DIR" \
    -d "$DATA_DIR" --log-file nvlog.json --resume-from-last "${precision_flags[@]}" "$@"
