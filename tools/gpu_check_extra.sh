#!/usr/bin/env bash
# The second GPU check: parts ranked by what a short GPU loan should prove first, under one hard
# time limit. `tools/gpu_check.sh build` copies it into the bundle beside the first; on the GPU
# machine, after `gpu_check.sh run`:
#
#   .gpu-bundle/gpu_check_extra.sh run
#
# Each part runs in rank order under `timeout` with its own budget, cut to what is left of the
# total (KVSIM_EXTRA_TOTAL_S, default TOTAL_S below); a part that cannot get its minimum is not
# started, and the summary lists it as dropped with the seconds it needed and had. A part whose
# tool is missing (no GPU, no compute-sanitizer, a test not in the bundle) is skipped, saying why.
# The summary table comes last: rank, part, result, seconds; then what was dropped or skipped.
# Exit 0 when every part that ran passed. docs/kernels.md ("The second GPU script") lists the
# parts, their budgets and what each proves.
#
#   tools/gpu_check_extra.sh compare-logs A B   compares two `kvsim run --kernel-log` logs step by
#                                               step (compare_kernel_logs below)
#   tools/gpu_check_extra.sh budgets            prints the parts' budgets summed, and the total
#
# With KVSIM_EXTRA_BACKEND=cpu the parts that can run on the CPU backend do so in place of the
# CUDA one (the ranking and the hard stop are tested that way:
# //tests/tools:gpu_check_extra_test); the others are skipped.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# The bundle when run from it (it holds kvsim-bin; it may sit inside a repository), else the
# repository root (run from tools/).
if [ -x "$here/kvsim-bin" ]; then root="$here"; else root="$(cd "$here/.." && pwd)"; fi

# The total limit, in seconds: with gpu_check.sh's 290 s, under 9 minutes for both scripts.
TOTAL_S=240
# Rank order; name:budget:minimum seconds (a part is started only with its minimum left).
PARTS=(
  "storm-backends:25:10"
  "storm-model-shape:70:40"
  "mla-mma-sync-on-sm90:30:15"
  "sanitizers:70:40"
  "benchmark-table:40:5"
)
# Tests shorten the parts (same names, smaller budgets) to check the ranking and the hard stop.
if [ -n "${KVSIM_EXTRA_PARTS:-}" ]; then read -r -a PARTS <<<"$KVSIM_EXTRA_PARTS"; fi

total_budget() {
  local sum=0 part
  for part in "${PARTS[@]}"; do
    IFS=: read -r _ budget _ <<<"$part"
    sum=$((sum + budget))
  done
  echo "$sum"
}

backend="${KVSIM_EXTRA_BACKEND:-cuda}"
kvsim="${KVSIM_BIN:-}"
if [ -z "$kvsim" ]; then
  if [ -x "$root/kvsim-bin" ]; then kvsim="$root/kvsim-bin"; else kvsim="$root/bazel-bin/cli/kvsim"; fi
fi
logs="${OUT:-$root/logs-extra}"

# Two `kvsim run --kernel-log` logs of one scenario on two backends (or paths), step by step:
# every line must agree on the pool, step, tokens appended and the hash of the cache bytes they
# stored, decode rows and the hash of every status, and the outputs checked; each output on both
# sides within the bound of the path that ran (error / bound at most 1). The outputs' own bits
# are counted, not required: the two backends' fp32 orders differ (docs/kernels.md, "Comparing
# two backends step by step"). Prints one line of figures; exit 1 with the first difference.
compare_kernel_logs() {
  local a="$1" b="$2"
  [ -s "$a" ] && [ -s "$b" ] || { echo "compare: missing or empty log: $a $b"; return 1; }
  if [ "$(wc -l <"$a")" -ne "$(wc -l <"$b")" ]; then
    echo "compare: $a and $b differ in length: $(wc -l <"$a") and $(wc -l <"$b") steps"
    return 1
  fi
  paste -d '\n' "$a" "$b" | awk -v a="$a" -v b="$b" '
    function field(line, name,   n, f, i) {
      n = split(line, f, " ")
      for (i = 1; i < n; i += 2) if (f[i] == name) return f[i + 1]
      return "missing"
    }
    NR % 2 == 1 { left = $0; next }
    {
      steps++
      split("pool step appended cache rows statuses checked gemm_checked", must, " ")
      for (k = 1; k <= 8; k++) {
        if (field(left, must[k]) != field($0, must[k])) {
          printf "compare: line %d differs in %s: %s has %s, %s has %s\n", steps, must[k], a,
                 field(left, must[k]), b, field($0, must[k])
          bad = 1; exit 1
        }
      }
      split("worst gemm_worst", ratios, " ")
      for (k = 1; k <= 2; k++) {
        x = field(left, ratios[k]); y = field($0, ratios[k])
        # Ratios are printed as decimals; anything else (inf, nan) is beyond the bound.
        if (x !~ /^[0-9]+\.[0-9]+$/ || y !~ /^[0-9]+\.[0-9]+$/ || x + 0 > 1 || y + 0 > 1) {
          printf "compare: line %d: %s %s and %s beyond the bound (%s, %s)\n", steps, ratios[k], x, y, a, b
          bad = 1; exit 1
        }
        if (x + 0 > top_a[k]) top_a[k] = x + 0
        if (y + 0 > top_b[k]) top_b[k] = y + 0
      }
      if (field(left, "out") == field($0, "out")) same_out++
      if (field(left, "gemm") != "0x0000000000000000") {
        gemm_steps++
        if (field(left, "gemm") == field($0, "gemm")) same_gemm++
      }
    }
    END {
      if (bad) exit 1
      printf "compare: %d steps alike in cache bytes, statuses and outputs checked; outputs the same bits on %d of them (INT4 projection %d of %d); largest error / bound %.3f and %.3f (attention), %.3f and %.3f (projection)\n",
             steps, same_out, same_gemm, gemm_steps, top_a[1], top_b[1], top_a[2], top_b[2]
    }'
}

# The storm slice of parts 1 and 2, on `path` (simple or fast) at `shape` (small or model), as a
# scenario file under $logs.
storm_scenario() {
  local path="$1" shape="$2" file="$logs/page-reuse-storm-$1-$2.yaml"
  { cat "$root/configs/scenarios/page-reuse-storm.yaml"
    printf 'kernel:\n  path: %s\n  shape: %s\n' "$path" "$shape"
    [ "$shape" = small ] || printf '  check_every: 32\n'; } >"$file"
  echo "$file"
}

# Whether run output `out` finished clean: no finding, preemptions above 0 and nothing outside the
# bound; on the fast path also no simple-path launch.
storm_clean() {
  local out="$1" path="$2"
  grep -q "^  findings: 0$" "$out" && grep -qE " [1-9][0-9]* preemptions" "$out" &&
    grep -qE " 0 outside the bound " "$out" || return 1
  [ "$path" = simple ] || { grep -q "decode attention 0 simple" "$out" && grep -q "INT4 GEMM 0 simple" "$out"; }
}

# Part 1: the page-reuse storm in kernel mode (328 steps, 33 preemptions, 597 recomputed
# positions) at the small shape on each path, on the backend under test and on the CPU, the two
# compared step by step (compare_kernel_logs). With KVSIM_EXTRA_BACKEND=cpu the CPU runs both
# sides, which checks the comparison and the run's determinism.
part_storm_backends() {
  local path scenario side name
  for path in simple fast; do
    scenario="$(storm_scenario "$path" small)"
    # The run under test, then the CPU's (named apart: with the CPU standing in they are two runs).
    for side in "$backend:tested" "cpu:cpu"; do
      name="storm-$path-${side#*:}"
      "$kvsim" run "$scenario" --configs "$root/configs" --mode kernel --backend "${side%%:*}" \
        --kernel-log "$logs/$name-log.txt" >"$logs/$name.txt" 2>&1 || return 1
      storm_clean "$logs/$name.txt" "$path" || { echo "$name: not clean (see $logs/$name.txt)"; return 1; }
    done
    local compared
    compared="$(compare_kernel_logs "$logs/storm-$path-tested-log.txt" "$logs/storm-$path-cpu-log.txt")" ||
      { echo "$compared"; return 1; }
    echo "figure: $path path, $backend against cpu: ${compared#compare: }"
  done
}

# Part 2: the storm's first simulated second (36 steps, 5 preemptions, 97 recomputed positions)
# on the fast paths at the deployment's own shape (Llama-3.1-70B at tp 2: 32 query and 4 KV heads
# of 128 per GPU, an 8192 x 28672 INT4 projection on the steps checked against the FP64
# reference, every 32nd), on CUDA and then on the CPU (18.2 s on a 2-core machine): each clean
# with no simple-path launch, the same state hash, and the two logs compared step by step. CUDA
# only: with the CPU on both sides this part would only repeat part 1 at twice its cost.
part_storm_model_shape() {
  if [ "$backend" != cuda ]; then echo "skipped: the model's shape is compared on the CUDA backend"; return 3; fi
  local scenario side compared
  scenario="$(storm_scenario fast model)"
  for side in cuda cpu; do
    "$kvsim" run "$scenario" --configs "$root/configs" --mode kernel --backend "$side" --max-time-s 1 \
      --kernel-log "$logs/storm-model-$side-log.txt" >"$logs/storm-model-$side.txt" 2>&1 || return 1
    storm_clean "$logs/storm-model-$side.txt" fast || { echo "model-shape storm on $side: not clean"; return 1; }
  done
  [ "$(grep 'state hash' "$logs/storm-model-cuda.txt")" = "$(grep 'state hash' "$logs/storm-model-cpu.txt")" ] ||
    { echo "state hashes differ"; return 1; }
  compared="$(compare_kernel_logs "$logs/storm-model-cuda-log.txt" "$logs/storm-model-cpu-log.txt")" ||
    { echo "$compared"; return 1; }
  echo "figure: model shape, fast path, cuda against cpu: ${compared#compare: }"
  grep -E "kernels:|kernel mode wall time" "$logs/storm-model-cuda.txt" | sed 's/^  /figure: model shape on cuda: /'
}

# Part 3: the mma.sync BF16 MLA kernel forced on compute capability 9.0 (mla_mma_sync_on_sm90)
# against the wgmma one that runs there by default: both within the reference's bound, within
# each other's, and the share of outputs with the same bits printed
# (DecodeFastMlaGpuTest.MmaSyncOnSm90EqualsWgmma). The test skips off compute capability 9.0.
part_mla_mma_sync_on_sm90() {
  if [ "$backend" != cuda ]; then echo "skipped: needs the CUDA backend"; return 3; fi
  local test="$root/tests/decode_fast_mla_gpu_test" out="$logs/mla-mma-sync-on-sm90.log"
  [ -x "$test" ] || { echo "skipped: decode_fast_mla_gpu_test not in the bundle"; return 3; }
  "$test" --gtest_color=no --gtest_filter='*MmaSyncOnSm90EqualsWgmma' >"$out" 2>&1 || { tail -n 20 "$out"; return 1; }
  grep -E "same bits in" "$out" | sed 's/^/figure: /'
  if grep -q "\[  SKIPPED \]" "$out"; then echo "skipped: $(grep -m 1 -A 1 'Skipped' "$out" | tail -n 1)"; return 3; fi
  grep -q "\[  PASSED  \] 1 test" "$out"
}

# The GPU tests with a SmallCaseForTheSanitizers: one per fast kernel family.
SMALL_CASE_TESTS=(decode_fast_gqa_gpu_test decode_fast_mla_gpu_test fast_gemm_gpu_test tag_check_gpu_test)

# Each fast kernel's small case without a sanitizer; fails when one fails.
plain_small_cases() {
  local test failed=0
  for test in "${SMALL_CASE_TESTS[@]}"; do
    "$root/tests/$test" --gtest_color=no --gtest_filter='*SmallCaseForTheSanitizers' \
      >"$logs/small-$test.log" 2>&1 || { failed=1; echo "$test: FAILED (see $logs/small-$test.log)"; }
  done
  return "$failed"
}

# Part 4: compute-sanitizer memcheck, racecheck and synccheck on the small case of each fast
# kernel's GPU test (its SmallCaseForTheSanitizers: two tiles, many splits, tails): GQA and MLA
# decode (every MLA kernel: mma.sync, bf16 wgmma, FP8 wgmma), the INT4 and FP8 GEMM, the tag
# check.
part_sanitizers() {
  if [ "$backend" != cuda ]; then echo "skipped: needs the CUDA backend"; return 3; fi
  local sanitizer
  sanitizer="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
  [ -x "$sanitizer" ] || { echo "skipped: no compute-sanitizer"; return 3; }
  local test tool log failed=0
  for test in "${SMALL_CASE_TESTS[@]}"; do
    [ -x "$root/tests/$test" ] || { echo "skipped: $test not in the bundle"; return 3; }
    # A filter that matches nothing would pass without running: the small case must be there.
    "$root/tests/$test" --gtest_list_tests --gtest_filter='*SmallCaseForTheSanitizers' | grep -q '^  ' ||
      { echo "skipped: $test has no SmallCaseForTheSanitizers"; return 3; }
  done
  # Tool by tool, memcheck first over every kernel: a part stopped at its budget has then run the
  # most telling tool everywhere (this log shows how far it got).
  for tool in memcheck racecheck synccheck; do
    for test in "${SMALL_CASE_TESTS[@]}"; do
      log="$logs/sanitizer-$tool-$test.log"
      if ! "$sanitizer" --tool "$tool" --error-exitcode 9 "$root/tests/$test" \
        --gtest_filter='*SmallCaseForTheSanitizers' >"$log" 2>&1; then
        # Some sandboxed GPU machines refuse the sanitizer the device: no verdict on the kernels.
        if grep -q "Device not supported" "$log" && [ "$failed" -eq 0 ]; then
          echo "compute-sanitizer says 'Device not supported' on this machine ($log): the small cases run without it"
          plain_small_cases || return 1
          echo "skipped: compute-sanitizer refused the device; the small cases passed without it"
          return 3
        fi
        failed=1
        echo "$tool $test: FAILED (see $log)"
        continue
      fi
      echo "$tool $test: $(grep -m 1 'ERROR SUMMARY' "$log" || echo passed)"
    done
  done
  return "$failed"
}

# Part 5: the benchmarks' verdicts as one table with the date and the device: attention against
# copy bandwidth and FP8 against BF16 attention, INT4 against the FP8 kernel and cuBLAS BF16, the
# tag check against one step's attention. gpu_check.sh has run the benchmarks (its logs, in $OUT
# or the bundle's logs/, are read); a benchmark without a log there is run here, in what is left.
# The table is also written to $logs/benchmark_table.md, for docs/kernels.md.
part_benchmark_table() {
  if [ "$backend" != cuda ]; then echo "skipped: needs the CUDA backend"; return 3; fi
  local first="${OUT:-$root/logs}" binary name log failed=0 device
  device="$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
  {
    echo "Benchmarks of $(cat "$root/COMMIT" 2>/dev/null || echo 'an unknown commit') on ${device:-an unnamed GPU}, $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo
    echo "| benchmark | verdict |"
    echo "|---|---|"
  } >"$logs/benchmark_table.md"
  ls "$root"/benchmarks/* >/dev/null 2>&1 || { echo "skipped: no benchmarks in $root/benchmarks"; return 3; }
  for binary in "$root"/benchmarks/*; do
    [ -x "$binary" ] || continue
    name="$(basename "$binary")"
    log="$first/$name.txt"
    if [ ! -s "$log" ]; then
      log="$logs/bench-$name.txt"
      "$binary" >"$log" 2>&1 || failed=1
    fi
    grep -h '^summary: ' "$log" | sed "s/^summary: /| $name | /; s/\$/ |/" >>"$logs/benchmark_table.md"
    grep -q '^summary: ' "$log" || echo "| $name | no summary line (see $log) |" >>"$logs/benchmark_table.md"
  done
  cat "$logs/benchmark_table.md"
  return "$failed"
}

run() {
  mkdir -p "$logs"
  local total="${KVSIM_EXTRA_TOTAL_S:-$TOTAL_S}"
  local deadline=$(($(date +%s) + total))
  local rows=() notes=() failed=0 rank=0 part name budget minimum left limit start status result
  echo "gpu_check_extra: ${#PARTS[@]} parts, ${total} s in all, backend $backend"
  for part in "${PARTS[@]}"; do
    rank=$((rank + 1))
    IFS=: read -r name budget minimum <<<"$part"
    left=$((deadline - $(date +%s)))
    if [ "$left" -lt "$minimum" ]; then
      rows+=("$(printf '%2d  %-24s %-9s %6s' "$rank" "$name" "DROPPED" "-")")
      notes+=("dropped $name: needs at least ${minimum} s, ${left} s left of ${total}")
      continue
    fi
    limit=$((budget < left ? budget : left))
    start=$(date +%s%N)
    timeout "$limit" bash -c "source '${BASH_SOURCE[0]}' --functions; part_${name//-/_}" \
      >"$logs/part-$name.log" 2>&1
    status=$?
    case "$status" in
      0) result="PASSED" ;;
      3) result="SKIPPED"; notes+=("$name: $(tail -n 1 "$logs/part-$name.log")") ;;
      124) result="TIMEOUT"; failed=$((failed + 1)); notes+=("$name: stopped at its ${limit} s") ;;
      *) result="FAILED"; failed=$((failed + 1)); notes+=("$name: see $logs/part-$name.log") ;;
    esac
    rows+=("$(printf '%2d  %-24s %-9s %6.1f' "$rank" "$name" "$result" "$(awk -v ns=$(($(date +%s%N) - start)) 'BEGIN { print ns / 1e9 }')")")
  done
  echo
  echo "== GPU check, second script (ranked; hard stop at ${total} s)"
  printf '%2s  %-24s %-9s %6s\n' "#" "part" "result" "s"
  printf '%s\n' "${rows[@]}"
  [ ${#notes[@]} -eq 0 ] || printf '  %s\n' "${notes[@]}"
  # What the parts measured (their `figure:` lines), for a summary read without the logs.
  grep -h '^figure: ' "$logs"/part-*.log 2>/dev/null | sed 's/^figure: /  /'
  echo "$failed failed"
  [ "$failed" -eq 0 ]
}

case "${1:-}" in
  run) run ;;
  budgets) echo "$(total_budget) $TOTAL_S" ;;
  compare-logs) shift; compare_kernel_logs "$@" ;;
  --functions) ;;  # sourced by run() for one part
  *)
    echo "usage: tools/gpu_check_extra.sh run | budgets | compare-logs A B (see the comment at the top)" >&2
    exit 2
    ;;
esac
