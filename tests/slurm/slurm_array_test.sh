#!/usr/bin/env bash
# A real single-node Slurm cluster on this machine (Debian's munge, slurmctld and slurmd, on
# localhost, configured in a temporary folder, on free ports) runs scripts/slurm/submit.sh with the
# fake measurement backend: a job array of 3 shards and the merge job (afterany). One task is
# cancelled mid-way and requeued; the test then waits for the merge and checks that every planned
# pair is in the merged profile exactly once, that the requeued task resumed its shard (nothing
# measured twice, nothing lost) and that the merge reports no duplicate and no missing pair.
# Exits 77 (ctest: skipped) with the reason where Slurm cannot be started here (not root, packages
# missing, a daemon that will not come up). Always stops the daemons it started, by their PIDs.
# Usage: tests/slurm/slurm_array_test.sh <flashtune binary>
set -euo pipefail
bin=$(realpath "${1:?usage: $0 <flashtune binary>}")
repo=$(cd "$(dirname "$0")/../.." && pwd)

skip() { echo "SKIP: $*" >&2; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || skip "slurmd needs root to start jobs (running as $(id -un))"
for tool in munged slurmctld slurmd sbatch scontrol squeue scancel sinfo python3; do
  command -v "$tool" > /dev/null || skip "$tool not installed (scripts/install-deps.sh installs munge, slurmctld, slurmd, slurm-client)"
done

work=$(mktemp -d /tmp/flashtune-slurm-test.XXXXXX)
chmod 711 "$work"  # munged refuses a socket folder others can write to, and wants it searchable
pids=()
cleanup() {
  set +e
  if [ -f "$work/slurm.conf" ] && [ -n "${SLURM_CONF:-}" ]; then
    # Jobs first (their slurmstepd would outlive slurmd), then the daemons, newest first.
    scancel --full --quiet --user=root 2> /dev/null
    for _ in $(seq 50); do
      [ -z "$(squeue -h -t running,completing,pending 2> /dev/null)" ] && break
      sleep 0.2
    done
  fi
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[i]}" 2> /dev/null; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2> /dev/null
  done
  if [ "${keep_logs:-0}" = 1 ]; then
    for f in "$work"/*.log "$work"/shards/*.log; do [ -f "$f" ] && { echo "---- $f"; tail -n 20 "$f"; }; done >&2
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# Reads a daemon's PID from its pid file (they daemonize), waiting for the file.
daemon_pid() {
  for _ in $(seq 100); do
    [ -s "$1" ] && { cat "$1"; return 0; }
    sleep 0.1
  done
  return 1
}

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# ---- munge: its own key and socket ----------------------------------------------------------
dd if=/dev/urandom of="$work/munge.key" bs=1024 count=1 status=none
chmod 600 "$work/munge.key"
munged --force --socket="$work/munge.sock" --key-file="$work/munge.key" --pid-file="$work/munged.pid" \
  --log-file="$work/munged.log" --seed-file="$work/munged.seed" > /dev/null 2>&1 ||
  skip "munged did not start: $(tail -n 2 "$work/munged.log" 2> /dev/null | tr '\n' ' ')"
pid=$(daemon_pid "$work/munged.pid") || skip "munged wrote no PID file"
pids+=("$pid")

# ---- slurm.conf: this host, 4 CPU slots (config_overrides: whatever the machine has) ----------
host=$(hostname -s)
ctld_port=$(free_port)
slurmd_port=$(free_port)
mkdir -p "$work/state" "$work/spool" "$work/shards"
cat > "$work/slurm.conf" << EOF
ClusterName=flashtune-ci
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
AuthInfo=socket=$work/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
JobRequeue=1
KillWait=5
MinJobAge=600
NodeName=$host NodeAddr=127.0.0.1 CPUs=4 State=UNKNOWN
PartitionName=ci Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$work/slurm.conf

slurmctld -i -f "$SLURM_CONF" > "$work/slurmctld.out" 2>&1 || skip "slurmctld did not start: $(tail -n 3 "$work/slurmctld.out" | tr '\n' ' ')"
pid=$(daemon_pid "$work/slurmctld.pid") || skip "slurmctld wrote no PID file: $(tail -n 3 "$work/slurmctld.log" | tr '\n' ' ')"
pids+=("$pid")
slurmd -f "$SLURM_CONF" > "$work/slurmd.out" 2>&1 || skip "slurmd did not start: $(tail -n 3 "$work/slurmd.out" | tr '\n' ' ')"
pid=$(daemon_pid "$work/slurmd.pid") || skip "slurmd wrote no PID file: $(tail -n 3 "$work/slurmd.log" | tr '\n' ' ')"
pids+=("$pid")
for i in $(seq 100); do
  [ "$(sinfo -h -n "$host" -o %t 2> /dev/null)" = idle ] && break
  [ "$i" = 100 ] && skip "the node did not come up idle: $(sinfo -h -o '%t %E' 2> /dev/null)"
  sleep 0.2
done
echo "slurm up: slurmctld on port $ctld_port, slurmd on $slurmd_port ($(sinfo -V))" >&2
keep_logs=1  # from here on, a failure shows the daemons' and jobs' logs

# ---- the plan: 3 fp32 workloads of a compiled head dimension, every fp32-accurate tiled config ---
"$bin" list --json > "$work/list.json"
python3 - "$work/list.json" "$work/workloads.json" "$work/planned.json" << 'EOF'
import json, sys
kernels = json.load(open(sys.argv[1]))["kernels"]
d = kernels[0]["d"]
# Every N here exceeds the decode family's 64 query rows: the plan leaves decode configs out; the
# tune's default precision (fp32) leaves out the TF32-only families (mma_1xtf32, wgmma_1xtf32).
configs = [k["name"] for k in kernels
           if k["d"] == d and k["precision"] == "fp32" and k["variant"] != "decode" and k["dtype"] == "fp32"]
workloads = [{"name": "s%d" % i, "B": b, "N": n, "d": d, "causal": c}
             for i, (b, n, c) in enumerate([(8, 1024, False), (4, 777, True), (16, 512, False)])]
json.dump({"schema_version": 1, "name": "slurm-ci", "workloads": workloads}, open(sys.argv[2], "w"))
json.dump([[w["name"], c] for w in workloads for c in configs], open(sys.argv[3], "w"))
EOF
planned=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))))' "$work/planned.json")
# About 6 s of fake measuring per shard (the cancel and requeue of task 1 happen well within it), whatever the kernel set.
delay=$((6000 * 3 / planned))
((delay > 0)) || delay=1
echo "plan: $planned pairs in 3 shards, fake backend ${delay} ms per pair" >&2

# ---- submit: the array and the merge job, as a user would --------------------------------------
out=$(bash "$repo/scripts/slurm/submit.sh" --shards 3 --dir "$work/shards" --out "$work/merged.json" --bin "$bin" \
  --no-gpu --tune-args "--backend fake --fake-delay-ms $delay" -- --workloads "$work/workloads.json")
array=$(awk '$1 == "array" {print $2}' <<< "$out")
merge=$(awk '$1 == "merge" {print $2}' <<< "$out")
[ -n "$array" ] && [ -n "$merge" ] || fail "submit.sh printed no job ids: $out"
echo "submitted: array $array, merge $merge" >&2

job_state() { squeue -h -t all -j "$1" -o %T 2> /dev/null | head -n 1; }
journal_pairs() {  # complete measurement lines in a journal (its header not counted)
  [ -f "$1" ] || { echo 0; return; }
  python3 -c 'import sys; n = open(sys.argv[1], "rb").read().count(b"\n"); print(max(n - 1, 0))' "$1"
}

# ---- cancel task 1 mid-way, then requeue it ------------------------------------------------------
victim=${array}_1
shard1=$work/shards/shard-1-of-3.json
for i in $(seq 200); do
  (($(journal_pairs "$shard1.journal") >= 2)) && break
  [ "$i" = 200 ] && fail "task 1 measured nothing within 20 s (state $(job_state "$victim"))"
  sleep 0.1
done
scancel "$victim"
for i in $(seq 100); do
  case $(job_state "$victim") in CANCELLED | COMPLETED | FAILED) break ;; esac
  [ "$i" = 100 ] && fail "task 1 did not end after scancel (state $(job_state "$victim"))"
  sleep 0.1
done
state_after_cancel=$(job_state "$victim")
before=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["measurements"]))' "$shard1")
before=$((before + $(journal_pairs "$shard1.journal")))
[ "$(job_state "$merge")" = PENDING ] || fail "the merge job left PENDING before the requeue: $(job_state "$merge")"
scontrol requeue "$victim"
# Slurm holds a requeued job back for a while (its begin time); let it start now.
scontrol update JobId="$victim" StartTime=now
echo "task 1 $state_after_cancel with $before pairs of its shard recorded; requeued" >&2

# ---- wait for the merge --------------------------------------------------------------------------
for i in $(seq 600); do
  state=$(job_state "$merge")
  case $state in COMPLETED) break ;; FAILED | CANCELLED | TIMEOUT | NODE_FAIL) fail "merge job $state" ;; esac
  [ "$i" = 600 ] && fail "the merge did not finish within 60 s (merge $state, tasks: $(squeue -h -t all -o '%i %T' | tr '\n' ' '))"
  sleep 0.1
done

# ---- checks ----------------------------------------------------------------------------------------
grep -q "restart 1" "$work/shards/tune-${array}_1.log" || fail "task 1 did not run again after the requeue"
python3 - "$work/merged.json" "$work/planned.json" "$work/merged.json.merge-report.json" "$shard1" "$before" << 'EOF'
import collections, json, os, sys
merged, planned, report = (json.load(open(p)) for p in sys.argv[1:4])
shard1, before = json.load(open(sys.argv[4])), int(sys.argv[5])
count = collections.Counter((m["workload"], m["config"]) for m in merged["measurements"])
want = {tuple(p) for p in planned}
twice = [p for p, n in count.items() if n > 1]
missing = want - set(count)
extra = set(count) - want
assert not twice, "measured twice in the merged profile: %s" % twice[:5]
assert not missing, "missing from the merged profile: %d, e.g. %s" % (len(missing), sorted(missing)[:5])
assert not extra, "not planned: %s" % sorted(extra)[:5]
assert report["duplicates"] == [], "merge reported duplicates: %s" % report["duplicates"][:3]
assert report["plan"]["missing"] == [] and report["plan"]["planned"] == len(want), report["plan"]
shards = sorted(i["shard"] for i in report["inputs"])
assert shards == ["0/3", "1/3", "2/3"], shards
# The requeued shard resumed: what the cancelled attempt recorded is there once, with the same timestamps.
assert len(shard1["measurements"]) >= before, (len(shard1["measurements"]), before)
assert not os.path.exists(sys.argv[4] + ".journal"), "shard 1's journal was not compacted"
print("merged profile: %d pairs, each planned pair exactly once" % len(count))
EOF
grep -q "already in" "$work/shards/tune-${array}_1.log" || fail "no resume line in task 1's log"
resumed=$(grep -o '[0-9]* already in' "$work/shards/tune-${array}_1.log" | tail -n 1 | awk '{print $1}')
((resumed >= before)) || fail "the requeued task resumed with $resumed pairs, the cancelled one had recorded $before"
echo "requeued task 1 resumed with $resumed pairs already in its shard" >&2
keep_logs=0
echo "PASS" >&2
