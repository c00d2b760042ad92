#!/usr/bin/env bash
# SIGKILLs a fake-backend `flashtune tune` of about 100,000 pairs at random points and resumes it
# each time, then checks that nothing was lost or recorded twice:
#   * before each kill, the pairs recorded so far (the profile, plus the fsynced lines of the
#     journal this run started); after it, the profile and its journal must still hold them all;
#   * the profile itself never holds a pair twice (its loader refuses that too);
#   * the final resume reports already_done = what the last kill left, and ends with every planned
#     pair exactly once and no journal.
# Most kill points are chosen as random pair counts over the whole run (waited for, then a random
# few ms more); one in four is a random time just after a resume starts, when the resume is
# compacting the previous run's journal into the profile.
# Usage: scripts/kill_resume_check.sh [--bin build/app/flashtune] [--pairs 100000] [--kills 20] [--seed 1]
set -euo pipefail
bin=build/app/flashtune pairs=100000 kills=20 seed=1
while (($#)); do
  case $1 in
    --bin) bin=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --kills) kills=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    *) echo "kill_resume_check.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -x "$bin" ] || { echo "kill_resume_check.sh: no flashtune binary at $bin (give --bin)" >&2; exit 2; }
work=$(mktemp -d /tmp/flashtune-kill-check.XXXXXX)
child=""
cleanup() {
  [ -n "$child" ] && kill -9 "$child" 2> /dev/null
  rm -rf "$work"
}
trap cleanup EXIT
RANDOM=$seed

"$bin" list --json > "$work/list.json"
python3 - "$work/list.json" "$pairs" "$work/workloads.json" << 'EOF'
import json, sys
kernels = json.load(open(sys.argv[1]))["kernels"]
d = kernels[0]["d"]
per = sum(1 for k in kernels if k["d"] == d and k["variant"] != "mma_1xtf32")
n = -(-int(sys.argv[2]) // per)
ws = [{"name": "w%d" % i, "B": 1 + i % 64, "N": 128 + 16 * (i % 512), "d": d, "causal": i % 2 == 1} for i in range(n)]
json.dump({"schema_version": 1, "name": "kill-check", "workloads": ws}, open(sys.argv[3], "w"))
EOF
p=$work/p.json
tune=("$bin" tune --backend fake --workloads "$work/workloads.json" --profile "$p")

# Unique pairs in the profile and its journal; fails on a pair the profile holds twice.
recorded_after() {
  python3 - "$p" << 'EOF'
import json, os, sys
path = sys.argv[1]
pairs = set()
if os.path.exists(path):
    ms = json.load(open(path))["measurements"]
    pairs = {(m["workload"], m["config"]) for m in ms}
    assert len(pairs) == len(ms), "the profile holds a pair twice"
if os.path.exists(path + ".journal"):
    lines = open(path + ".journal", "rb").read().split(b"\n")[1:-1]  # header; torn or empty tail
    for line in lines:
        m = json.loads(line)
        pairs.add((m["workload"], m["config"]))
print(len(pairs))
EOF
}
journal_lines_of() {  # complete measurement lines of the journal the process $1 started, else 0
  local j=$p.journal
  # The journal may go between the test and the read (a compaction): then 0 of this run's lines.
  head -c 300 "$j" 2> /dev/null | grep -q "\"pid\":$1[,}]" || { echo 0; return; }
  echo $(($(wc -l < "$j" 2> /dev/null || echo 1) - 1))
}

have=0
for ((k = 1; k <= kills; k++)); do
  "${tune[@]}" > /dev/null 2>&1 &
  child=$!
  if ((RANDOM % 4 == 0)); then
    point="at start"
    sleep "0.$(printf '%03d' $((RANDOM % 1000)))"  # inside the resume's compaction, or just after
  else
    point="at a pair count"
    target=$((have + 1 + (RANDOM * 32768 + RANDOM) % ((pairs - have) / (kills - k + 2) + 1)))
    while kill -0 "$child" 2> /dev/null && (($(journal_lines_of "$child") + have < target)); do sleep 0.02; done
    sleep "0.0$((RANDOM % 10))"
  fi
  before=$((have + $(journal_lines_of "$child")))
  kill -9 "$child" 2> /dev/null || { echo "kill $k: the tune had already ended" >&2; exit 1; }
  wait "$child" 2> /dev/null || true
  child=""
  after=$(recorded_after)
  ((after >= before)) || { echo "kill $k: $before pairs recorded before the kill, $after after: LOST" >&2; exit 1; }
  echo "kill $k ($point): $before recorded before, $after after the kill (of $pairs)"
  have=$after
done

start=$(date +%s.%N)
"${tune[@]}" --json > "$work/final.json" 2> /dev/null
python3 - "$work/final.json" "$p" "$have" "$pairs" "$start" << 'EOF'
import json, os, sys, time
s, profile = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
have, pairs = int(sys.argv[3]), int(sys.argv[4])
ms = profile["measurements"]
unique = {(m["workload"], m["config"]) for m in ms}
assert s["complete"] and s["planned"] == pairs, s
assert s["already_done"] == have, "resume found %d pairs, the kills left %d" % (s["already_done"], have)
assert len(ms) == len(unique) == pairs, "%d measurements, %d unique, %d planned" % (len(ms), len(unique), pairs)
assert not os.path.exists(sys.argv[2] + ".journal")
print("final resume: %d already done, %d measured, %d of %d planned pairs, each once; %.0f s" %
      (s["already_done"], s["measured"], len(unique), pairs, time.time() - float(sys.argv[5])))
EOF
echo "PASS: $kills SIGKILLs, nothing lost, nothing recorded twice"
