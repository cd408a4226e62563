#!/usr/bin/env bash
# One real run of a job in a pids cgroup (cgroup v1 or v2, root only) whose pids.max is MAX.
#   tools/resource-lab/run_pids.sh OUT_DIR VENV MAX LAUNCH JOB [job args...]
# LAUNCH: plain | tee:N | logdir:N (torchrun --nproc_per_node N). Writes OUT_DIR/logs and prints the exit code.
set -u
out=$1 venv=$2 max=$3 launch=$4 job=$5; shift 5
job="$(cd "$(dirname "$0")" && pwd)/$job"
mkdir -p "$out/logs"
port=$((20000 + RANDOM % 20000))
case $launch in
  plain) cmd="$venv/bin/python $job $*"; log="$out/logs/train.log" ;;
  tee:*) cmd="$venv/bin/torchrun --nproc_per_node ${launch#tee:} --master_port $port --tee 3 $job $*"; log="$out/logs/console.log" ;;
  logdir:*) cmd="$venv/bin/torchrun --nproc_per_node ${launch#logdir:} --master_port $port --log_dir $out/logs/torchrun --redirects 3 $job $*"; log="$out/logs/console.log" ;;
esac
group=/sys/fs/cgroup/pids/firstfault-lab-$$
[ -d /sys/fs/cgroup/pids ] || group=/sys/fs/cgroup/firstfault-lab-$$  # cgroup v2
mkdir -p "$group"
OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} timeout 300 sh -c "echo $max > $group/pids.max && echo \$\$ > $group/cgroup.procs && exec $cmd" > "$log" 2>&1
status=$?
rmdir "$group" 2>/dev/null
echo "exit $status"
