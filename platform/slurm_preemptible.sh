#!/usr/bin/env bash
# A SLURM job that survives its time limit and preemption, continuing where it stopped:
#   sbatch platform/slurm_preemptible.sh -m WaveGlow --config-file configs/waveglow_nvidia.json -d data/LJSpeech-1.1
# (the arguments are train.py's; OUTPUT_DIR, default ./output/<job name>, is where every allocation of the job
# writes and resumes). 120 s before the time limit SLURM sends SIGUSR1 to every rank; train.py finishes its step,
# rank 0 writes a checkpoint, every rank exits with status 75, and this script requeues the job, whose next
# allocation runs the same command with --resume-from-last (the first one starts from scratch). A preemption that
# sends SIGTERM instead (PreemptMode=REQUEUE with a GraceTime) is handled the same way; SLURM requeues it itself.
# Change the sizes below to your cluster's; the grace time must cover one training step and one checkpoint write.
#SBATCH --job-name=speech-train
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-node=8
#SBATCH --cpus-per-task=8
#SBATCH --time=04:00:00
#SBATCH --signal=USR1@120
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH --output=slurm-%x-%j.out
set -uo pipefail
PREEMPTED_EXIT_CODE=75  # train.py's status after a stop signal and its checkpoint (common/preemption.py)

export OUTPUT_DIR=${OUTPUT_DIR:-./output/${SLURM_JOB_NAME:-train}}
MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
export MASTER_ADDR MASTER_PORT=${MASTER_PORT:-29500} WORLD_SIZE=$SLURM_NTASKS

# srun starts one process per GPU itself, rather than torchrun: SLURM's signal then reaches every rank directly
# (torchrun would die of SIGUSR1 unless told --signals-to-handle), and each rank's exit status reaches srun.
srun bash -c 'RANK=$SLURM_PROCID LOCAL_RANK=$SLURM_LOCALID exec python train.py -o "$OUTPUT_DIR" \
    --resume-from-last "$@"' train.py "$@"
status=$?
if [ "$status" -eq "$PREEMPTED_EXIT_CODE" ]; then
    echo "train.py stopped with a checkpoint in $OUTPUT_DIR: requeueing job $SLURM_JOB_ID"
    scontrol requeue "$SLURM_JOB_ID"
fi
exit "$status"
