#!/usr/bin/env bash
# Runs examples/slurm/remote_decode.sbatch on a real one-node Slurm cluster that this test
# starts (Debian's slurm-wlm and munge: munged, slurmctld and slurmd as root, on ports of
# their own, from a slurm.conf in a temp dir) and stops by pid afterwards. The job's two
# trainer ranks are forkfeed-bench --remote runs; each dumps the indices it got, and
# together they must cover the dataset exactly once per epoch.
#
#   check_remote_decode.sh BIN_DIR
#
# Exit 77 (ctest: skipped) when not root or Slurm is not installed.
set -euo pipefail
bin=$(cd "$1" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
if [[ $(id -u) -ne 0 ]]; then echo "skipped: the Slurm daemons of this test run as root"; exit 77; fi
for tool in munged slurmctld slurmd sbatch scontrol; do
  command -v "$tool" >/dev/null || { echo "skipped: $tool is not installed (apt-get install slurm-wlm munge)"; exit 77; }
done

dir=$(mktemp -d /tmp/forkfeed-slurm-XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  rm -rf "$dir"
}
trap cleanup EXIT
mkdir -p "$dir"/{state,spool,log,munge,out}
# Ports of this run's own, below the kernel's ephemeral range (ip_local_port_range, 32768
# up here), which the other tests' connections and port-0 listeners draw from: one of those
# took the daemon's port once, failing this test.
low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
low=$(( low > 20010 ? low : 32768 ))
base=$(( 20000 + (RANDOM % ((low - 20000 - 3) / 2)) * 2 ))
node=$(hostname -s)
cat >"$dir/slurm.conf" <<CONF
ClusterName=forkfeedtest
SlurmctldHost=$node
SlurmctldPort=$base
SlurmdPort=$((base + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
NodeName=$node CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=10 State=UP OverSubscribe=YES
CONF
export SLURM_CONF=$dir/slurm.conf
head -c 1024 /dev/urandom >"$dir/munge.key"
chmod 400 "$dir/munge.key"
munged --key-file="$dir/munge.key" --socket="$dir/munge/munge.socket" --pid-file="$dir/munge/munged.pid" \
  --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed" --force
pids+=("$(cat "$dir/munge/munged.pid")")
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
for _ in $(seq 100); do [[ -s $dir/slurmctld.pid && -s $dir/slurmd.pid ]] && break; sleep 0.1; done
pids+=("$(cat "$dir/slurmd.pid")" "$(cat "$dir/slurmctld.pid")")
for _ in $(seq 100); do sinfo -h -o %T 2>/dev/null | grep -qx idle && break; sleep 0.2; done

"$bin/forkfeed-mkdata" --out "$dir/data" --images 60 --classes 3 --seed 5 >/dev/null
head -c 32 /dev/urandom | base64 >"$dir/token"
chmod 600 "$dir/token"
port=$((base + 2))
# Two ranks, each dumps what it read.
train='UCX_TLS=tcp '"$bin"'/forkfeed-bench --remote "${FORKFEED_REMOTE%%,*}" --dataset train --batch 4 --size 16 \
  --epochs 2 --rank $SLURM_PROCID --world-size $SLURM_NTASKS --log-level warn \
  --dump-indices '"$dir"'/out/rank$SLURM_PROCID.txt'
sbatch --wait --nodes=1 --ntasks-per-node=2 --output="$dir/out/job.log" \
  --export=ALL,DATASET="train=$dir/data",TOKEN_FILE="$dir/token",PORT=$port,FORKFEED_BIN="$bin",UCX_TLS=tcp,TRAIN_CMD="$train" \
  "$here/examples/slurm/remote_decode.sbatch" || { cat "$dir/out/job.log" "$dir"/log/*.log >&2; exit 1; }
cat "$dir/out/job.log"
/usr/bin/python3 - "$dir/out" 60 <<'PY'
import pathlib, sys
out, n = pathlib.Path(sys.argv[1]), int(sys.argv[2])
per_epoch = {}
for rank in (0, 1):
    for line in (out / f"rank{rank}.txt").read_text().split("\n"):
        if not line.strip() or line.startswith("#"):
            continue
        epoch, _batch, index, _label = line.split()  # forkfeed-bench --dump-indices: one sample a line
        per_epoch.setdefault(int(epoch), []).append(int(index))
assert sorted(per_epoch) == [0, 1], f"epochs read: {sorted(per_epoch)}"
for epoch, indices in per_epoch.items():
    assert sorted(indices) == list(range(n)), f"epoch {epoch}: not exactly once ({len(indices)} indices)"
print(f"remote_decode.sbatch: 2 ranks read {n} samples exactly once in each of 2 epochs")
PY
