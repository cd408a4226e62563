#!/usr/bin/env bash
# One real run of a job under one limit of the machine (root only):
#   tools/resource-lab/run.sh OUT_DIR VENV LIMIT LAUNCH JOB [job args...]
# LIMIT:  tmpfs=MOUNTPOINT:SIZE[,ro]  MOUNTPOINT is a tmpfs of SIZE (read-only with ,ro) in a mount
#                                     namespace of the job's own (unshare -m): /dev/shm, a checkpoint folder
#         pids=MAX                    a cgroup (v1 or v2) whose pids.max (processes and threads) is MAX
#         memory=SIZE                 a cgroup whose memory limit is SIZE: the OOM killer ends the job past it
# LAUNCH: plain | shell | tee:N | logdir:N (torchrun --nproc_per_node N); `shell` runs the job as bash's
#         child, which reports a signal death as a terminal does.
# JOB:    shm_job.py | ckpt_job.py | threads_job.py | memory_job.py (this folder). Writes OUT_DIR/logs, prints the exit code.
set -u
out=$1 venv=$2 limit=$3 launch=$4 job=$5; shift 5
job="$(cd "$(dirname "$0")" && pwd)/$job"
mkdir -p "$out/logs"
port=$((20000 + RANDOM % 20000))
case $launch in
  plain) cmd="exec $venv/bin/python $job $*"; log="$out/logs/train.log" ;;
  shell) cmd="bash -c '$venv/bin/python $job $*; exit \$?'"; log="$out/logs/train.log" ;;
  tee:*) cmd="exec $venv/bin/torchrun --nproc_per_node ${launch#tee:} --master_port $port --tee 3 $job $*"; log="$out/logs/console.log" ;;
  logdir:*) cmd="exec $venv/bin/torchrun --nproc_per_node ${launch#logdir:} --master_port $port --log_dir $out/logs/torchrun --redirects 3 $job $*"; log="$out/logs/console.log" ;;
  *) echo "LAUNCH must be plain, shell, tee:N or logdir:N" >&2; exit 2 ;;
esac
kind=${limit%%=*} value=${limit#*=}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
case $kind in
  tmpfs)
    mountpoint=${value%%:*} size=${value#*:}
    options="size=${size%,ro}"
    [ "${size%,ro}" != "$size" ] && options="$options,ro"
    timeout 300 unshare -m sh -c "mkdir -p $mountpoint && mount -t tmpfs -o $options tmpfs $mountpoint && $cmd" > "$log" 2>&1
    status=$? ;;
  pids|memory)
    file=pids.max
    [ "$kind" = memory ] && { file=memory.limit_in_bytes; [ -d /sys/fs/cgroup/memory ] || file=memory.max; }
    group=/sys/fs/cgroup/$kind/firstfault-lab-$$
    [ -d /sys/fs/cgroup/$kind ] || group=/sys/fs/cgroup/firstfault-lab-$$  # cgroup v2
    mkdir -p "$group"
    timeout 300 sh -c "echo $value > $group/$file && echo \$\$ > $group/cgroup.procs && $cmd" > "$log" 2>&1
    status=$?
    rmdir "$group" 2>/dev/null ;;
  *) echo "LIMIT must be tmpfs=MOUNTPOINT:SIZE[,ro], pids=MAX or memory=SIZE" >&2; exit 2 ;;
esac
echo "exit $status"
