#!/usr/bin/env bash
# One real run of a job in a mount namespace where MOUNTPOINT is a tmpfs of SIZE (root only: unshare -m).
#   tools/resource-lab/run.sh OUT_DIR VENV MOUNTPOINT SIZE[,ro] LAUNCH JOB [job args...]
# LAUNCH: plain | tee:N | logdir:N (torchrun --nproc_per_node N). JOB: shm_job.py | ckpt_job.py.
# Writes OUT_DIR/logs and prints the exit code.
set -u
out=$1 venv=$2 mountpoint=$3 size=$4 launch=$5 job=$6; shift 6
job="$(cd "$(dirname "$0")" && pwd)/$job"
mkdir -p "$out/logs"
port=$((20000 + RANDOM % 20000))
case $launch in
  plain) cmd="$venv/bin/python $job $*"; log="$out/logs/train.log" ;;
  tee:*) cmd="$venv/bin/torchrun --nproc_per_node ${launch#tee:} --master_port $port --tee 3 $job $*"; log="$out/logs/console.log" ;;
  logdir:*) cmd="$venv/bin/torchrun --nproc_per_node ${launch#logdir:} --master_port $port --log_dir $out/logs/torchrun --redirects 3 $job $*"; log="$out/logs/console.log" ;;
esac
options="size=${size%,ro}"
[ "${size%,ro}" != "$size" ] && options="$options,ro"
OMP_NUM_THREADS=1 timeout 300 unshare -m sh -c "mkdir -p $mountpoint && mount -t tmpfs -o $options tmpfs $mountpoint && exec $cmd" > "$log" 2>&1
echo "exit $?"
