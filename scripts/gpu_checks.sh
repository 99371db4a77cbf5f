#!/usr/bin/env bash
# The GPU half of the project, in order of priority, each stage under its own time limit and all of them under one
# deadline, with every log kept and a summary at the end. Rerunnable on any machine with a CUDA GPU and nvcc.
#
#   scripts/gpu_checks.sh [STAGE ...]          (default: all, in this order)
#
#   env        GPU, driver, CUDA, PyTorch and tool versions                          -> env.json
#   build      compile the nvwavenet CUDA extension (cached afterwards)             -> build.log
#   test       the GPU tests (tests/nvwavenet/test_kernels_gpu.py and test_benchmark.py)  -> test.log
#   sanitize   compute-sanitizer memcheck, racecheck, synccheck and initcheck over one short generation of every
#              kernel variant in fp32 and fp16 (scripts/nvwavenet/sanitize_nvwavenet.py)   -> sanitize_<tool>.log
#   nvwavenet  scripts/nvwavenet/benchmark_nvwavenet.sh: medium and large, every variant and precision, batch 1, the
#              real-time batch search at 16 and 24 kHz, and "auto"'s pick          -> nvwavenet_benchmark.json
#   corpus     the synthetic eSpeak NG corpus the training stages read (into $WORK_DIR/synthetic)
#   training   training throughput (scripts/benchmark_training.py) of Tacotron 2 and WaveGlow in TF32, --amp and
#              --bf16 at the per-GPU batch sizes of NVIDIA's A100 recipes (platform/launch.sh)  -> training_*.json
#   nan        scripts/train_waveglow.sh PRECISION=amp for NAN_EPOCHS epochs: non-finite losses and skipped steps
#   pipeline   scripts/benchmark_pipeline.sh on the GPU: Tacotron 2 + WaveGlow + denoiser, random weights at
#              NVIDIA's sizes, 600 frames per utterance                             -> pipeline.jsonl
#   trainer    the shared trainer's whole loop on CUDA through train.py: Tacotron 2 with --amp by updates (validation
#              and checkpoints every N updates), stopped and resumed; the two curves are compared -> trainer_resume.json
#   hifigan    scripts/hifigan/benchmark_hifigan.sh on the GPU (generator inference grid, training step at batch 16 in
#              TF32, then --amp and --bf16), and HIFIGAN_UPDATES updates of HiFi-GAN with --amp through train.py (two
#              loss scalers): non-finite losses and skipped steps              -> hifigan_*.json
#   graphs     the CUDA-graph decoder's GPU tests (tests/tacotron2/test_cuda_graphs.py), then text to wav at batch 1
#              with the eager, fast and CUDA-graph decoders (scripts/benchmark_pipeline.py --decoder)  -> pipeline_graphs.jsonl
#   wav2vec2   wav2vec 2.0 Base CTC inference at batch 1 and 16 in fp32, fp16 and bf16 (SDPA attention), with and
#              without NVIDIA's Hourglass, and Base pre-training throughput at Hourglass factors 1, 2 and 4 in bf16
#              (scripts/wav2vec2/benchmark_wav2vec2*.sh)                   -> wav2vec2_*.json
#   ncu        Nsight Compute over one batch-1 generation of each nvwavenet kernel (scripts/nvwavenet/profile_kernels.py),
#              and each kernel's registers, spills and shared memory (cuobjdump)   -> ncu_<variant>.txt, resources.txt
#   tts        scripts/tacotron2/gpu_tts_run.sh: Tacotron 2 and HiFi-GAN trained for a fixed time, scored by the
#              recognizer ASR (required)                                      -> gpu_tts/
#
# Environment:
#   PYTHON      interpreter (default .venv/bin/python, else python3)
#   LOG_DIR     where logs and results go (default output/gpu_checks); summary.md there at the end
#   WORK_DIR    scratch: corpus, training outputs (default /tmp/gpu_checks)
#   WHEELS      a folder of wheels to install first (pip --no-index --target $WORK_DIR/site, then on PYTHONPATH),
#               for a machine without a package registry
#   DEADLINE    seconds for the whole run (default 3600); a stage gets at most what is left, minus 15 s
#   T_<STAGE>   per-stage limit in seconds (defaults below), e.g. T_NVWAVENET=300
#   NVW_SAMPLES samples per timed nvwavenet run (default 8192); NVW_MAX_BATCH (512)
#   CORPUS_UTTERANCES (500), TRAIN_WARMUP (5), TRAIN_ITERATIONS (20), TRAIN_PRECISIONS ("tf32 amp bf16"),
#   TACOTRON2_BATCH, WAVEGLOW_BATCH, WAVEGLOW_AMP_BATCH (NVIDIA's A100 sizes: 128, 4, 10; less for a smaller GPU)
#   NAN_EPOCHS (7: ~300 steps of batch 10 over 450 clips), PIPELINE_REPEATS (5), PIPELINE_WARMUP (2)
#   EXTRA_TRAIN_FLAGS  appended to the train.py flags of the training and nan stages (e.g. smaller models for a
#               dry run of the script on a CPU: "--cpu", with small batches)
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD

source scripts/project_python.sh
LOG_DIR=$(mkdir -p "${LOG_DIR:-output/gpu_checks}" && cd "${LOG_DIR:-output/gpu_checks}" && pwd)
WORK_DIR=${WORK_DIR:-/tmp/gpu_checks}
DEADLINE=${DEADLINE:-3600}
ALL_STAGES=(env build test sanitize nvwavenet corpus training nan pipeline trainer hifigan graphs wav2vec2 ncu tts)
declare -A LIMIT=([env]=60 [build]=600 [test]=300 [sanitize]=400 [nvwavenet]=900 [corpus]=120 [training]=600
                  [nan]=300 [pipeline]=900 [trainer]=240 [hifigan]=420 [graphs]=300 [wav2vec2]=420 [ncu]=300
                  [tts]=900)
export PYTHON LOG_DIR WORK_DIR REPO
export PYTHONUNBUFFERED=1 MAX_JOBS=${MAX_JOBS:-$(nproc)}
mkdir -p "$WORK_DIR"

if [ -n "${WHEELS:-}" ]; then  # before anything imports them
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$WORK_DIR/site" "$WHEELS"/*.whl >"$LOG_DIR/wheels.log" 2>&1 || {
        echo "installing the wheels of $WHEELS failed (see $LOG_DIR/wheels.log)" >&2; exit 2; }
    export PYTHONPATH="$WORK_DIR/site${PYTHONPATH:+:$PYTHONPATH}"
fi

DATA=$WORK_DIR/synthetic
TRAIN_LIST=$DATA/filelists/synthetic_audio_text_train.txt
VAL_LIST=$DATA/filelists/synthetic_audio_text_val.txt

# ---- the stages (each runs in its own process: `gpu_checks.sh --stage NAME`) -------------------------------------

stage_env() {
    nvidia-smi || true
    "$PYTHON" - <<'EOF'
import json, os, platform, shutil, subprocess
import torch
def run(*command):
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"unavailable: {error}"
info = {"host": platform.node(), "python": platform.python_version(), "torch": torch.__version__,
        "torch_cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
        "cuda_available": torch.cuda.is_available(), "cpu_count": os.cpu_count()}
if torch.cuda.is_available():
    props = torch.cuda.get_device_properties(0)
    info.update(gpu=props.name, gpu_memory_gib=round(props.total_memory / 2**30, 1),
                multiprocessors=props.multi_processor_count, compute_capability=f"{props.major}.{props.minor}")
    info["driver"] = run("nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader")
    info["clocks"] = run("nvidia-smi", "--query-gpu=clocks.sm,clocks.max.sm,clocks.mem,power.limit",
                         "--format=csv,noheader")
info["nvcc"] = run("nvcc", "--version").splitlines()[-1:] if shutil.which("nvcc") else "not found"
info["compute_sanitizer"] = (run("compute-sanitizer", "--version").splitlines()[-1:]
                             if shutil.which("compute-sanitizer") else "not found")
print(json.dumps(info, indent=2))
open(os.path.join(os.environ["LOG_DIR"], "env.json"), "w").write(json.dumps(info, indent=2))
EOF
}

stage_build() {
    NVWAVENET_VERBOSE_BUILD=1 "$PYTHON" -c "
import time; start = time.perf_counter()
from nvwavenet import kernels
backend = kernels.cuda_library()
print(f'nvwavenet CUDA extension ready in {time.perf_counter() - start:.1f} s: {len(backend.kernels())} kernels')"
}

stage_test() {
    "$PYTHON" -m pytest -q -p no:cacheprovider tests/nvwavenet/test_kernels_gpu.py \
        tests/nvwavenet/test_benchmark.py
}

stage_sanitize() {
    if ! command -v compute-sanitizer >/dev/null; then echo "compute-sanitizer not found"; return 2; fi
    local status=0 tool
    for tool in memcheck racecheck synccheck initcheck; do
        echo "== compute-sanitizer --tool $tool"
        # Without PyTorch's caching allocator each tensor is its own allocation, so memcheck sees its true end.
        PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout -k 5 "${T_SANITIZER_TOOL:-120}" compute-sanitizer --tool "$tool" \
            --error-exitcode 3 --print-limit 30 "$PYTHON" -m scripts.nvwavenet.sanitize_nvwavenet \
            >"$LOG_DIR/sanitize_$tool.log" 2>&1
        local rc=$?
        tail -n 12 "$LOG_DIR/sanitize_$tool.log"
        echo "$tool exit status $rc"
        [ $rc -eq 0 ] || status=1
    done
    return $status
}

stage_nvwavenet() {
    PYTHON=$PYTHON bash scripts/nvwavenet/benchmark_nvwavenet.sh --gpu-samples "${NVW_SAMPLES:-8192}" \
        --max-batch "${NVW_MAX_BATCH:-512}" --output "$LOG_DIR/nvwavenet_benchmark.json"
}

stage_corpus() {
    "$PYTHON" -m scripts.data.synthetic_corpus --output-dir "$DATA" --filelists-dir "$DATA/filelists" \
        --num-utterances "${CORPUS_UTTERANCES:-500}"
}

# NVIDIA's A100 per-GPU batch sizes (platform/launch.sh): Tacotron 2 128 in every precision; WaveGlow 4 in TF32
# and 10 with mixed precision (AMP's recipe, which our BF16 recipe follows).
stage_training() {
    local status=0 model precision flags batch
    for model in Tacotron2 WaveGlow; do
        for precision in ${TRAIN_PRECISIONS:-tf32 amp bf16}; do
            case "$precision" in
                tf32) flags=(--tf32) ;; fp32) flags=(--no-tf32) ;; amp) flags=(--amp) ;; bf16) flags=(--bf16) ;;
                *) echo "unknown precision $precision"; return 2 ;;
            esac
            if [ "$model" = Tacotron2 ]; then
                batch=${TACOTRON2_BATCH:-128}
                flags+=(-lr 1e-3 --weight-decay 1e-6 --grad-clip-thresh 1.0)
            else
                case "$precision" in
                    amp) batch=${WAVEGLOW_AMP_BATCH:-10} flags+=(--grad-clip-thresh 65504.0) ;;
                    bf16) batch=${WAVEGLOW_AMP_BATCH:-10} flags+=(--grad-clip-thresh 3.4028234663852886e+38) ;;
                    *) batch=${WAVEGLOW_BATCH:-4} flags+=(--grad-clip-thresh 3.4028234663852886e+38) ;;
                esac
                flags+=(-lr 1e-4 --weight-decay 0 --segment-length 8000 --cudnn-benchmark)
            fi
            echo "== $model $precision batch $batch"
            timeout -k 5 "${T_TRAINING_RUN:-120}" "$PYTHON" -m scripts.benchmark_training \
                --warmup "${TRAIN_WARMUP:-5}" --iterations "${TRAIN_ITERATIONS:-20}" \
                --json "$LOG_DIR/training_${model}_${precision}.json" -- -m "$model" -o "$WORK_DIR/bench_$model" \
                -d "$DATA" --training-files "$TRAIN_LIST" --validation-files "$VAL_LIST" --epochs 1 -bs "$batch" \
                --num-workers 8 --quiet "${flags[@]}" ${EXTRA_TRAIN_FLAGS:-} || status=1
        done
    done
    return $status
}

stage_nan() {
    rm -rf "$WORK_DIR/nan_waveglow"
    PYTHON=$PYTHON NUM_GPUS=1 PRECISION=amp BATCH_SIZE=${WAVEGLOW_AMP_BATCH:-10} EPOCHS="${NAN_EPOCHS:-7}" \
        OUTPUT_DIR="$WORK_DIR/nan_waveglow" DATA_DIR="$DATA" bash scripts/train_waveglow.sh \
        --training-files "$TRAIN_LIST" --validation-files "$VAL_LIST" --num-workers 8 --quiet \
        --epochs-per-checkpoint 1000 ${EXTRA_TRAIN_FLAGS:-}
    local rc=$?
    cp "$WORK_DIR/nan_waveglow/nvlog.json" "$LOG_DIR/nan_waveglow_nvlog.json" 2>/dev/null
    return $rc
}

stage_pipeline() {
    # NVIDIA's latency table is WaveGlow 256 channels, batch 1 and 4, fp16 and fp32; then bf16, then 512 channels.
    local status=0
    DEVICE=gpu PYTHON=$PYTHON CHANNELS=256 PRECISIONS="fp16 fp32 bf16" BATCH_SIZES="1 4" \
        REPEATS=${PIPELINE_REPEATS:-5} WARMUP=${PIPELINE_WARMUP:-2} OUTPUT="$LOG_DIR/pipeline.jsonl" \
        bash scripts/benchmark_pipeline.sh || status=1
    DEVICE=gpu PYTHON=$PYTHON CHANNELS=512 PRECISIONS="fp16 fp32" BATCH_SIZES="1" \
        REPEATS=${PIPELINE_REPEATS:-5} WARMUP=${PIPELINE_WARMUP:-2} OUTPUT="$LOG_DIR/pipeline.jsonl" \
        bash scripts/benchmark_pipeline.sh || status=1
    return $status
}

stage_trainer() {
    local run=(-m Tacotron2 -d "$DATA" --training-files "$TRAIN_LIST" --validation-files "$VAL_LIST" -bs 32 -lr 1e-3
               --amp --epochs 100 --val-interval-updates 10 --save-interval-updates 15 --num-workers 4 --quiet)
    rm -rf "$WORK_DIR/trainer_straight" "$WORK_DIR/trainer_stopped"
    "$PYTHON" train.py "${run[@]}" -o "$WORK_DIR/trainer_straight" --max-updates 40 || return 1
    "$PYTHON" train.py "${run[@]}" -o "$WORK_DIR/trainer_stopped" --max-updates 22 || return 1
    "$PYTHON" train.py "${run[@]}" -o "$WORK_DIR/trainer_stopped" --max-updates 40 --resume-from-last || return 1
    "$PYTHON" - "$WORK_DIR/trainer_straight/nvlog.json" "$WORK_DIR/trainer_stopped/nvlog.json" <<'EOF'
import json, math, os, sys
from common.logger import read_dllogger_file
straight, resumed = ([(r["step"], r["data"]["train_loss"]) for r in read_dllogger_file(path)
                      if isinstance(r["step"], list) and len(r["step"]) == 2 and "train_loss" in r["data"]]
                     for path in sys.argv[1:])
result = {"updates": [len(straight), len(resumed)], "equal_steps": sum(a == b for a, b in zip(straight, resumed)),
          "max_difference": max(abs(a[1] - b[1]) for a, b in zip(straight, resumed)),
          "finite": all(math.isfinite(loss) for _, loss in straight + resumed),
          "first_loss": straight[0][1], "last_loss": straight[-1][1]}
print(json.dumps(result))
open(os.path.join(os.environ["LOG_DIR"], "trainer_resume.json"), "w").write(json.dumps(result, indent=2))
sys.exit(0 if len(straight) == len(resumed) == 40 and result["finite"] else 1)
EOF
}

stage_hifigan() {
    local status=0 precision
    DEVICE=gpu PYTHON=$PYTHON DATA_DIR="$DATA" FILELISTS="$DATA/filelists" OUTPUT_DIR="$LOG_DIR" BATCH_SIZE=16 \
        REPEATS=${HIFIGAN_REPEATS:-10} WARMUP=3 ITERATIONS=${TRAIN_ITERATIONS:-20} \
        bash scripts/hifigan/benchmark_hifigan.sh || status=1
    for precision in amp bf16; do
        echo "== HiFi-GAN training step, --$precision, batch 16"
        timeout -k 5 "${T_TRAINING_RUN:-120}" "$PYTHON" -m scripts.benchmark_training --warmup 3 \
            --iterations "${TRAIN_ITERATIONS:-20}" --json "$LOG_DIR/hifigan_training_$precision.json" -- \
            -m HiFiGAN -o "$WORK_DIR/bench_hifigan" -d "$DATA" --training-files "$TRAIN_LIST" \
            --validation-files "$VAL_LIST" -bs 16 --segment-length 8192 -lr 3e-4 --epochs 1 --num-workers 8 --quiet \
            "--$precision" || status=1
    done
    rm -rf "$WORK_DIR/hifigan_amp"
    "$PYTHON" train.py -m HiFiGAN --config-file configs/hifigan_nvidia.json -o "$WORK_DIR/hifigan_amp" -d "$DATA" \
        --training-files "$TRAIN_LIST" --validation-files "$VAL_LIST" --amp --max-updates "${HIFIGAN_UPDATES:-150}" \
        --num-workers 8 --quiet || status=1
    cp "$WORK_DIR/hifigan_amp/nvlog.json" "$LOG_DIR/hifigan_amp_nvlog.json" 2>/dev/null
    return $status
}

stage_graphs() {
    local status=0 decoder precision
    "$PYTHON" -m pytest -q -p no:cacheprovider tests/tacotron2/test_cuda_graphs.py || status=1
    for decoder in eager fast cuda-graphs; do
        for precision in fp16 fp32; do
            echo "== text to wav, batch 1, $precision, decoder $decoder"
            "$PYTHON" -m scripts.benchmark_pipeline --batch-size 1 --precision "$precision" --decoder "$decoder" \
                --repeats "${PIPELINE_REPEATS:-5}" --warmup "${PIPELINE_WARMUP:-2}" \
                --json "$LOG_DIR/pipeline_graphs.jsonl" || status=1
        done
    done
    echo "== text to wav, batch 4, fp16, decoder cuda-graphs"
    "$PYTHON" -m scripts.benchmark_pipeline --batch-size 4 --precision fp16 --decoder cuda-graphs \
        --repeats "${PIPELINE_REPEATS:-5}" --warmup "${PIPELINE_WARMUP:-2}" --json "$LOG_DIR/pipeline_graphs.jsonl" \
        || status=1
    return $status
}

stage_wav2vec2() {
    local status=0 precision hourglass name
    for hourglass in none "[2,(8,4),2]"; do
        for precision in fp32 amp bf16; do
            echo "== wav2vec 2.0 Base inference, $precision, Hourglass $hourglass"
            # The benchmark's random-weight checkpoint (360 MB) stays in WORK_DIR; its JSON comes to LOG_DIR.
            name=wav2vec2_inference_${precision}_${hourglass//[^0-9a-z]/}
            DEVICE=gpu PYTHON=$PYTHON PRECISION=$precision BATCH_SIZES="1 16" REPEATS=${W2V_REPEATS:-20} \
                HOURGLASS=$hourglass OUTPUT_DIR="$WORK_DIR/$name" \
                bash scripts/wav2vec2/benchmark_wav2vec2_inference.sh || status=1
            cp "$WORK_DIR/$name/wav2vec2_inference.json" "$LOG_DIR/$name.json" 2>/dev/null
        done
    done
    echo "== wav2vec 2.0 Base pre-training throughput, bf16, Hourglass factors 1 2 4"
    DEVICE=gpu PYTHON=$PYTHON PRECISION=bf16 MODES=pretrain SIZES=base FACTORS="1 2 4" \
        WARMUP=${W2V_WARMUP:-2} ITERATIONS=${W2V_ITERATIONS:-5} DATA_DIR="$WORK_DIR/wav2vec2_benchmark" \
        OUTPUT_DIR="$WORK_DIR/wav2vec2_pretrain" bash scripts/wav2vec2/benchmark_wav2vec2.sh || status=1
    cp "$WORK_DIR/wav2vec2_pretrain/wav2vec2_training.json" "$LOG_DIR/wav2vec2_pretrain.json" 2>/dev/null
    return $status
}

stage_ncu() {
    if ! command -v ncu >/dev/null; then echo "ncu (Nsight Compute) not found"; return 2; fi
    local status=0 variant library
    library=$("$PYTHON" -c "
import glob
from nvwavenet import kernels
kernels.cuda_library()
print(max(glob.glob(str(kernels._build_dir() / 'cuda_*' / '*.so')), key=lambda path: __import__('os').path.getmtime(path)))")
    cuobjdump --dump-resource-usage "$library" | grep -E "Function|REG" >"$LOG_DIR/resources.txt" || status=1
    grep -A1 -E "Function .*(single_block|dual_block|persistent)_kernel" "$LOG_DIR/resources.txt" | head -40
    for variant in single dual persistent; do
        echo "== ncu: $variant, medium model, batch 1, ${NCU_PRECISION:-fp32}"
        timeout -k 5 120 ncu --kernel-name "regex:^${variant}" --launch-skip 1 --launch-count 1 \
            --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
            --section SchedulerStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
            "$PYTHON" -m scripts.nvwavenet.profile_kernels --variant "$variant" --precision "${NCU_PRECISION:-fp32}" \
            --samples "${NCU_SAMPLES:-2048}" >"$LOG_DIR/ncu_$variant.txt" 2>&1 || status=1
        grep -E "samples/s|Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Stall|Warp Cycles Per Issued|Issued Ipc|Memory Throughput|Compute \(SM\)|L2 Hit|Block Limit|Grid Size|Block Size|No Eligible" \
            "$LOG_DIR/ncu_$variant.txt" | head -40
    done
    return $status
}

stage_tts() {
    [ -n "${ASR:-}" ] || { echo "set ASR to the recognizer's checkpoint"; return 2; }
    PYTHON=$PYTHON WORK_DIR="$WORK_DIR/gpu_tts" OUTPUT_DIR="$LOG_DIR/gpu_tts" bash scripts/tacotron2/gpu_tts_run.sh
}

if [ "${1:-}" = --stage ]; then
    "stage_$2"
    exit $?
fi

# ---- the driver ----------------------------------------------------------------------------------------------------

stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=("${ALL_STAGES[@]}")
for stage in "${stages[@]}"; do
    [ -n "${LIMIT[$stage]:-}" ] || { echo "unknown stage '$stage' (${ALL_STAGES[*]})" >&2; exit 2; }
done
started=$SECONDS
for stage in "${stages[@]}"; do
    override=T_${stage^^}
    limit=${!override:-${LIMIT[$stage]}}
    left=$((DEADLINE - (SECONDS - started) - 15))
    if [ "$left" -lt 20 ]; then
        printf '%s\tnot run (deadline)\t0\n' "$stage" >>"$LOG_DIR/stages.tsv"
        continue
    fi
    [ "$limit" -le "$left" ] || limit=$left
    echo "=== $stage (limit ${limit} s) ==="
    stage_start=$SECONDS
    timeout -k 10 "$limit" bash "$0" --stage "$stage" 2>&1 | tee "$LOG_DIR/$stage.log"
    rc=${PIPESTATUS[0]}
    case $rc in 0) result=ok ;; 124|137) result="timed out" ;; *) result="failed ($rc)" ;; esac
    printf '%s\t%s\t%d\n' "$stage" "$result" $((SECONDS - stage_start)) >>"$LOG_DIR/stages.tsv"
    echo "=== $stage: $result in $((SECONDS - stage_start)) s ==="
done
"$PYTHON" -m scripts.gpu_checks_report "$LOG_DIR" | tee "$LOG_DIR/summary.md"
