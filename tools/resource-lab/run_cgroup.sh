#!/usr/bin/env bash
# One real run of a job in a cgroup (v1 or v2, root only) with one limit: pids=MAX (its tasks) or
# memory=BYTES (the OOM killer ends it past that).
#   tools/resource-lab/run_cgroup.sh OUT_DIR VENV pids=MAX|memory=SIZE LAUNCH JOB [job args...]
# LAUNCH: plain | shell | tee:N | logdir:N (torchrun --nproc_per_node N); `shell` runs the job as a
# child of bash, which reports a signal death as a terminal does. Writes OUT_DIR/logs, prints the exit code.
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
esac
controller=${limit%%=*} value=${limit#*=}
case $controller in
  pids) file=pids.max ;;
  memory) file=memory.limit_in_bytes; [ -d /sys/fs/cgroup/memory ] || file=memory.max ;;
  *) echo "limit must be pids=N or memory=SIZE" >&2; exit 2 ;;
esac
group=/sys/fs/cgroup/$controller/firstfault-lab-$$
[ -d /sys/fs/cgroup/$controller ] || group=/sys/fs/cgroup/firstfault-lab-$$  # cgroup v2
mkdir -p "$group"
OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} timeout 300 sh -c "echo $value > $group/$file && echo \$\$ > $group/cgroup.procs && $cmd" > "$log" 2>&1
status=$?
rmdir "$group" 2>/dev/null
echo "exit $status"
