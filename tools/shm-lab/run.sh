#!/usr/bin/env bash
# One real run of shm_job.py in a mount namespace whose /dev/shm is SIZE (root only: unshare -m).
#   tools/shm-lab/run.sh OUT_DIR VENV SIZE LAUNCH [job args...]
# LAUNCH: plain | tee:N | logdir:N (torchrun --nproc_per_node N). Writes OUT_DIR/logs and prints the exit code.
set -u
out=$1 venv=$2 size=$3 launch=$4; shift 4
job="$(cd "$(dirname "$0")" && pwd)/shm_job.py"
mkdir -p "$out/logs"
case $launch in
  plain) cmd="$venv/bin/python $job $*"; log="$out/logs/train.log" ;;
  tee:*) cmd="$venv/bin/torchrun --nproc_per_node ${launch#tee:} --master_port $((20000 + RANDOM % 20000)) --tee 3 $job $*"; log="$out/logs/console.log" ;;
  logdir:*) cmd="$venv/bin/torchrun --nproc_per_node ${launch#logdir:} --master_port $((20000 + RANDOM % 20000)) --log_dir $out/logs/torchrun --redirects 3 $job $*"; log="$out/logs/console.log" ;;
esac
OMP_NUM_THREADS=1 timeout 300 unshare -m sh -c "mount -t tmpfs -o size=$size tmpfs /dev/shm && exec $cmd" > "$log" 2>&1
echo "exit $?"
