#!/usr/bin/env bash
# The test command: installs what is needed, then runs these stages in order (each one's variable skips it
# when 0; a failed stage does not stop the ones after it):
#   build             every target, the tests and both binaries in debug (`swift build --build-tests`): the
#                     one build the stages after it use; never skipped.
#   swift-test        every unit and integration test (`swift test --skip-build`); never skipped.
#   bench-thresholds  the malloc counts of the per-packet benchmarks against Benchmarks/Thresholds
#                     (scripts/bench-thresholds.sh, a release build of the benchmark package; SFU_BENCH_THRESHOLDS).
#   interop           real aiortc clients through `sfu serve` in a private network namespace (scripts/interop.sh,
#                     needs root; SFU_INTEROP).
#   soak              rooms of simulated clients join, talk and leave with garbage datagrams mixed in
#                     (`sfu soak`; SFU_SOAK_CYCLES is the number of cycles, 12 by default).
#   hostile           hostile clients attack a node while a victim room talks (`sfu hostile`; SFU_HOSTILE).
#   browser           the demo in three headless Chromium browsers (scripts/browser-test.sh; SFU_BROWSER).
#   shaped            Chromium publishers and a subscriber over shaped links, each in a network namespace of its
#                     own: a capped downlink, a lossy uplink (scripts/shaped-test.sh; SFU_SHAPED).
#   reach             Chromium over UDP, over ICE-TCP with UDP blocked, through coturn over TLS/443 with UDP
#                     blocked, over IPv6 to a dual-stack node, and Firefox ESR, each in a network namespace of its own
#                     (scripts/reach-test.sh; SFU_REACH).
#   onset             a new talker's first words in a real Chromium listener, with and without the node's onset
#                     replay (scripts/onset-test.sh; SFU_ONSET).
#   cluster           two node processes in network namespaces of their own share a registry and relay a room;
#                     kill -9 of the room's home, the talker heard again on the survivor (scripts/cluster-test.sh;
#                     SFU_CLUSTER).
#   janus             a short `sfu bench --against janus` checks the load generator against both servers
#                     (scripts/bench-check.sh; SFU_JANUS).
#   api-fuzz          schemathesis fuzzes the control API against docs/openapi.yaml (scripts/api-fuzz.sh;
#                     SFU_API_FUZZ).
#   fuzz              libFuzzer on each parser, the room, the ICE agent and the worker core's datagrams and
#                     sessions for a bounded time (scripts/fuzz.sh; SFU_FUZZ_SECONDS per target, 20 by default).
# At the end one table gives every stage's result (pass, FAIL or skipped) and wall time, then swift-testing's
# count of passed and failed tests; the exit status is non-zero when any stage failed.
set -euo pipefail
cd "$(dirname "$0")/.."
run_start=${EPOCHREALTIME/./}  # the budget counts from here: installing is part of the command
scripts/install-deps.sh --tests
source scripts/lib.sh
use_libsrtp

# The stages: the group, the name, the variable that skips it when 0 (=its default; - for none), and the
# command, which sees that variable's value (with its default) as $value. Groups run in order; the stages of
# one group run side by side (each one's output is held and printed whole when the group ends): only stages
# whose figures and checks do not depend on having the cores to themselves share a group (README, Testing).
mapfile -t stages <<'TABLE'
1  build             -                       run_build
2  swift-test        -                       run_swift_test
3  bench-thresholds  SFU_BENCH_THRESHOLDS=1  scripts/bench-thresholds.sh
4  interop           SFU_INTEROP=1           scripts/interop.sh
5  soak              SFU_SOAK_CYCLES=12      run_soak "$value"
6  hostile           SFU_HOSTILE=1           run_hostile
7  browser           SFU_BROWSER=1           scripts/browser-test.sh
8  shaped            SFU_SHAPED=1            scripts/shaped-test.sh
9  reach             SFU_REACH=1             scripts/reach-test.sh
10 onset             SFU_ONSET=1             scripts/onset-test.sh
11 cluster           SFU_CLUSTER=1           scripts/cluster-test.sh
12 janus             SFU_JANUS=1             scripts/bench-check.sh
13 api-fuzz          SFU_API_FUZZ=1          scripts/api-fuzz.sh
14 fuzz              SFU_FUZZ_SECONDS=20     scripts/fuzz.sh "$value"
TABLE

test_log=$(mktemp)

# Every target in debug, the tests and both binaries (`sfu`, `sfu-lab`) included: the one build the stages
# after it share (each one's build_sfu finds it done).
run_build() {
  local log status
  log=$(mktemp)
  set +e
  swift build --build-tests 2>&1 | tee "$log" | build_progress "every target and the tests (debug)"
  status=${PIPESTATUS[0]}
  set -e
  [ "$status" -eq 0 ] || { grep -E "error:" "$log" | head -30; echo "!! swift build --build-tests failed; full log: $log"; return "$status"; }
  rm -f "$log"
}

# swift test, without the lines of tests that passed; its whole output stays in $test_log for the summary.
run_swift_test() {
  local status=0
  swift test --skip-build 2>&1 | tee "$test_log" | grep -vE "^(􀟈|◇|↳) |^Test Suite|^Test Case|^✔ (Test|Suite) [a-zA-Z]" || status=${PIPESTATUS[0]}
  return "$status"
}

run_soak() {
  echo "== soak: rooms of simulated clients join, talk and leave $1 times, with garbage datagrams"
  build_sfu debug
  timeout 600 "$sfu" soak --cycles "$1"
}

run_hostile() {
  echo "== hostile: stale RTCP, offer storms, vanished and stalled clients, replays, NACK/SSRC/RTCP abuse, floods, API caps, renegotiations after wraps and switches, SSRC moves, extension ids, ICE-TCP floods and adoption, SRTCP floods, while a victim room talks"
  build_sfu debug
  timeout 600 "$sfu" hostile
}

# Microseconds since the epoch.
now_us() { echo "${EPOCHREALTIME/./}"; }

# The CPU time a stage takes, counted in a cgroup of its own (cgroup v1's cpuacct, or v2): every process it
# starts - nodes, browsers, servers, the tools - is in it, and nothing else is, so the figure holds on a shared
# machine. Where no cgroup can be made, the machine's busy time during the stage stands in (marked ~).
cg_base=
for d in /sys/fs/cgroup/cpuacct /sys/fs/cgroup/unified /sys/fs/cgroup; do
  if [ -w "$d" ] && mkdir -p "$d/sfu-test-$$" 2>/dev/null; then cg_base=$d/sfu-test-$$; break; fi
done
stage_cgroup_cleanup() { [ -n "$cg_base" ] && find "$cg_base" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null; rmdir "$cg_base" 2>/dev/null || true; }
trap stage_cgroup_cleanup EXIT
# Puts the calling shell in stage $1's cgroup (its children follow).
stage_cgroup_join() { [ -n "$cg_base" ] && mkdir -p "$cg_base/$1" && echo "$BASHPID" > "$cg_base/$1/cgroup.procs" 2>/dev/null || true; }
# Stage $1's CPU seconds so far, or nothing without a cgroup.
stage_cpu_seconds() {
  local g=$cg_base/$1
  if [ -f "$g/cpuacct.usage" ]; then awk '{ printf "%.1f", $1 / 1e9 }' "$g/cpuacct.usage"
  elif [ -f "$g/cpu.stat" ]; then awk '$1 == "usage_usec" { printf "%.1f", $2 / 1e6 }' "$g/cpu.stat"
  fi
}
# CPU time the whole machine spent busy so far, in hundredths of a second (the stand-in).
busy_ticks() {
  local cpu user nice system idle iowait irq softirq steal rest
  read -r cpu user nice system idle iowait irq softirq steal rest < /proc/stat
  echo $(( user + nice + system + irq + softirq + steal ))
}

results_dir=$(mktemp -d)

# Runs stage $1 (command $2, its variable's value $3) and writes "name|result|seconds|cores|note" to its
# result file. A subshell of its own: a stage that exits (build_sfu on a failed build) fails alone.
run_stage() {
  local name=$1 command=$2 value=$3 start busy status us seconds cpu cores
  start=$(now_us)
  busy=$(busy_ticks)
  set +e
  (set -e; stage_cgroup_join "$name"; eval "$command")
  status=$?
  set -e
  us=$(( $(now_us) - start ))
  seconds=$(printf '%d.%d' $(( us / 1000000 )) $(( us % 1000000 / 100000 )))
  # Cores the stage kept busy on average (2.00: both cores of this machine kind all the time).
  cpu=$(stage_cpu_seconds "$name")
  if [ -n "$cpu" ]; then
    cores=$(awk -v c="$cpu" -v us="$us" 'BEGIN { printf "%.2f", (us > 0 ? c / (us / 1e6) : 0) }')
  else
    cores=$(awk -v b=$(( $(busy_ticks) - busy )) -v us="$us" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "~%.2f", (us > 0 ? b / hz / (us / 1e6) : 0) }')
  fi
  if [ "$status" -eq 0 ]; then
    echo "$name|pass|$seconds|$cores|" > "$results_dir/$name"
  else
    echo "$name|FAIL|$seconds|$cores|exit status $status" > "$results_dir/$name"
  fi
}

# Runs the stages of group $1: one in the foreground; several side by side, each one's output held in a log
# and printed when all of them ended.
run_group() {
  local group=$1 row g name skip command var value commands=() names=()
  for row in "${stages[@]}"; do
    read -r g name skip command <<< "$row"
    [ "$g" = "$group" ] || continue
    # SFU_STAGES="a b": only those (a developer's partial run; the budget then means nothing).
    if [ -n "${SFU_STAGES:-}" ] && [[ " $SFU_STAGES " != *" $name "* ]]; then
      echo "$name|skipped|-|-|not in SFU_STAGES" > "$results_dir/$name"
      continue
    fi
    value=""
    if [ "$skip" != "-" ]; then
      var=${skip%%=*}
      value=${!var:-${skip#*=}}
      if [ "$value" = "0" ]; then
        echo "$name|skipped|-|-|$var=0" > "$results_dir/$name"
        continue
      fi
    fi
    names+=("$name")
    commands+=("$command|$value")
  done
  if [ ${#names[@]} -eq 1 ]; then
    run_stage "${names[0]}" "${commands[0]%|*}" "${commands[0]##*|}"
  elif [ ${#names[@]} -gt 1 ]; then
    echo "== side by side: ${names[*]} (each one's output follows when all have ended)"
    local i jobs=()
    for i in "${!names[@]}"; do
      run_stage "${names[$i]}" "${commands[$i]%|*}" "${commands[$i]##*|}" > "$results_dir/${names[$i]}.log" 2>&1 &
      jobs+=($!)
    done
    wait "${jobs[@]}" || true
    for i in "${!names[@]}"; do
      echo "---- ${names[$i]}"
      cat "$results_dir/${names[$i]}.log"
    done
  fi
}

for group in $(for row in "${stages[@]}"; do echo "${row%% *}"; done | uniq); do run_group "$group"; done

results=()  # one "name|result|seconds|cores|note" per stage, in the table's order
failed_stages=0
for row in "${stages[@]}"; do
  read -r g name skip command <<< "$row"
  r=$(cat "$results_dir/$name" 2>/dev/null || echo "$name|FAIL|-|-|no result")
  results+=("$r")
  case "$r" in *"|FAIL|"*) failed_stages=$(( failed_stages + 1 )) ;; esac
done
swift_status=0
case "${results[0]}${results[1]}" in *"|FAIL|"*|*"|skipped|"*) swift_status=1 ;; esac
rm -rf "$results_dir"

echo
echo "== summary"
printf '%-18s %-8s %8s %6s\n' stage result seconds cores
for r in "${results[@]}"; do
  IFS='|' read -r name result seconds cores note <<< "$r"
  printf '%-18s %-8s %8s %6s%s\n' "$name" "$result" "$seconds" "$cores" "${note:+  $note}"
done
# The budget (README, Testing): the whole command, builds included, on a fresh 2-core machine. Past it, say so
# here, where the growth shows the day it happens, not the day CI runs out of time.
total_s=$(( ($(now_us) - run_start) / 1000000 ))
budget=${SFU_TEST_BUDGET_SECONDS:-2400}
printf 'total %d:%02d (budget %d:%02d)\n' $(( total_s / 60 )) $(( total_s % 60 )) $(( budget / 60 )) $(( budget % 60 ))
if [ "$total_s" -gt "$budget" ]; then
  echo "!! the test command took $(( total_s - budget )) s more than its budget of $budget s (SFU_TEST_BUDGET_SECONDS): see the stage times above and README's table"
fi
summary=$(grep -E "Test run with [0-9]+ tests?" "$test_log" | tail -1 || true)
failed=$(grep -cE "^✘ Test .* failed" "$test_log" || true)
total=$(echo "$summary" | grep -oE "with [0-9]+ tests?" | grep -oE "[0-9]+" || echo 0)
passed=$(( swift_status == 0 ? total : total - failed ))
echo "$summary"
echo "swift-testing: $passed passed, $failed failed"
rm -f "$test_log"
exit $(( failed_stages > 0 ))
