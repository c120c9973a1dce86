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
# tool is missing (no GPU, no compute-sanitizer, a switch not yet built) is skipped, saying why.
# The summary table comes last: rank, part, result, seconds; then what was dropped or skipped.
# Exit 0 when every part that ran passed.
#
# With KVSIM_EXTRA_BACKEND=cpu the parts that can run on the CPU backend do so in place of the
# CUDA one (the ranking and the hard stop are tested that way:
# //tests/tools:gpu_check_extra_test); the others are skipped.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# The repository root when run from tools/, the bundle when run from it.
if [ -d "$here/../configs/scenarios" ]; then root="$(cd "$here/.." && pwd)"; else root="$here"; fi

# The total limit, in seconds: with gpu_check.sh's 290 s, under 9 minutes for both scripts.
TOTAL_S=240
# Rank order; name:budget:minimum seconds (a part is started only with its minimum left).
PARTS=(
  "storm-fast-path:70:30"
  "mla-mma-sync-on-sm90:30:15"
  "sanitizers:90:40"
  "benchmarks:50:20"
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

# Part 1: the page-reuse storm in kernel mode on the fast paths, on the backend under test, with
# the oracle on: it must finish with no finding, preemptions above 0, no output outside the fast
# path's bound and no simple-path launch. On CUDA it runs at the deployment's own shape
# (Llama-3.1-70B at tp 2: 32 query and 4 KV heads of 128 per GPU, an 8192 x 28672 INT4
# projection, the FP64 reference on every 32nd step), then the CPU backend runs the small shape
# (the model's would cost it minutes), and the two must agree on the run's state hash: the
# bookkeeping and every verdict, which no kernel shape changes.
part_storm_fast_path() {
  local small="$logs/page-reuse-storm-fast.yaml" model="$logs/page-reuse-storm-fast-model.yaml"
  { cat "$root/configs/scenarios/page-reuse-storm.yaml"; printf 'kernel:\n  path: fast\n'; } >"$small"
  { cat "$root/configs/scenarios/page-reuse-storm.yaml"
    printf 'kernel:\n  path: fast\n  shape: model\n  check_every: 32\n'; } >"$model"
  local scenario="$small"
  [ "$backend" != cuda ] || scenario="$model"
  local out="$logs/storm-$backend.txt"
  "$kvsim" run "$scenario" --configs "$root/configs" --mode kernel --backend "$backend" >"$out" 2>&1 || return 1
  grep -q "^  findings: 0$" "$out" || return 1
  grep -qE " [1-9][0-9]* preemptions" "$out" || return 1
  grep -q "decode attention 0 simple" "$out" || return 1
  grep -q "INT4 GEMM 0 simple" "$out" || return 1
  grep -qE " 0 outside the bound " "$out" || return 1
  if [ "$backend" = cuda ]; then
    "$kvsim" run "$small" --configs "$root/configs" --mode kernel --backend cpu >"$logs/storm-cpu.txt" 2>&1 || return 1
    [ "$(grep 'state hash' "$out")" = "$(grep 'state hash' "$logs/storm-cpu.txt")" ] || return 1
  fi
  return 0
}

# Part 2: the mma.sync BF16 MLA kernel forced on compute capability 9.0 and compared with the
# wgmma one there. The switch is not built yet: skipped, saying so.
part_mla_mma_sync_on_sm90() {
  echo "skipped: no switch forces the mma.sync BF16 MLA kernel on sm_90 yet"
  return 3
}

# Part 3: compute-sanitizer memcheck, racecheck and synccheck on one small case of each fast
# kernel's GPU test.
part_sanitizers() {
  if [ "$backend" != cuda ]; then echo "skipped: needs the CUDA backend"; return 3; fi
  local sanitizer
  sanitizer="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
  [ -x "$sanitizer" ] || { echo "skipped: no compute-sanitizer"; return 3; }
  local test tool failed=0
  for test in decode_fast_gqa_gpu_test decode_fast_mla_gpu_test fast_gemm_gpu_test; do
    [ -x "$root/tests/$test" ] || { echo "skipped: $test not in the bundle"; return 3; }
    # A filter that matches nothing would pass without running: name the small cases first.
    "$root/tests/$test" --gtest_list_tests --gtest_filter='*Small*' | grep -q '^  ' ||
      { echo "skipped: $test has no test named *Small* to sanitize"; return 3; }
    for tool in memcheck racecheck synccheck; do
      "$sanitizer" --tool "$tool" --error-exitcode 9 "$root/tests/$test" --gtest_filter='*Small*' \
        >"$logs/sanitizer-$tool-$test.log" 2>&1 || failed=1
    done
  done
  return "$failed"
}

# Part 4: the benchmarks as one table (they print their own `summary:` lines).
part_benchmarks() {
  if [ "$backend" != cuda ]; then echo "skipped: needs the CUDA backend"; return 3; fi
  local binary failed=0
  for binary in "$root"/benchmarks/*; do
    [ -x "$binary" ] || continue
    "$binary" >"$logs/bench-$(basename "$binary").txt" 2>&1 || failed=1
  done
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
  echo "$failed failed"
  [ "$failed" -eq 0 ]
}

case "${1:-}" in
  run) run ;;
  budgets) echo "$(total_budget) $TOTAL_S" ;;
  --functions) ;;  # sourced by run() for one part
  *)
    echo "usage: tools/gpu_check_extra.sh run | budgets (see the comment at the top)" >&2
    exit 2
    ;;
esac
