#!/usr/bin/env bash
# The GPU check, in two halves.
#
#   tools/gpu_check.sh build   (here, where Bazel is) builds every test tagged `gpu` and every
#                              binary tagged `gpu_benchmark` with static project libraries and C++
#                              runtime, and copies them into .gpu-bundle/ with this script. The
#                              binaries need nothing on the GPU machine but the NVIDIA driver.
#                              `build --mutants` also builds, for each CUDA-only mutant of
#                              tools/mutants/cuda/, the tests expected to kill it, with the mutation
#                              applied, into .gpu-bundle/mutants/NAME/ (minutes per mutant).
#                              It also writes the static kernel report (tools/kernel_report) for
#                              the bundled commit to .gpu-bundle/kernel_report.md: the GPU machine
#                              has no disassembler.
#                              It also copies tools/gpu_check_extra.sh, the second GPU script
#                              (ranked parts under one hard stop; run it after this one), with
#                              kvsim and configs/ it runs, and prints both scripts' budgets
#                              summed.
#                              Last it packs the bundle into .gpu-bundle.tar.gz (about a quarter
#                              of its size, most of it the kernels' device code), which is what
#                              travels to a GPU machine that takes a limited working tree.
#   tools/gpu_check.sh device  (on the GPU machine, from the repository root, in one command)
#                              unpacks .gpu-bundle.tar.gz when the bundle is not there, runs
#                              `run` and then gpu_check_extra.sh with their logs in a scratch
#                              folder, and leaves at most four files in $OUT (or .gpu-results/):
#                              logs.tar.gz (every log), gemm_table.yaml, benchmark_table.md and
#                              summary.txt, whose text (both summary tables and the benchmark
#                              table) it prints last, where a short output tail still holds it.
#                              Both scripts' budgets: under 9 minutes.
#   tools/gpu_check.sh run     (on the GPU machine, from the repository root or the bundle) runs
#                              them all, each within its time budget (BUDGETS below: under 5
#                              minutes in all), and prints a summary table last: each binary's
#                              result and time, the benchmarks' `summary:` lines, and the static
#                              report's gated kernels and verdict. Full logs go to
#                              $OUT (if set) or .gpu-bundle/logs/, and with them the GEMM
#                              benchmark's kernel table, gemm_table.yaml (docs/kernels.md): review
#                              it, then copy it to configs/measured/GPU.yaml for `kvsim plan`.
#                              KVSIM_GPU names the GPU as configs/gpus/ does; by default it is
#                              read off nvidia-smi for the GPUs there. With mutants in the bundle
#                              it then runs each mutant's tests and prints which failed (killed
#                              by) or SURVIVED.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bundle="$root/.gpu-bundle"

# Seconds each binary may run on the GPU machine before it is stopped and counted as failed
# (TIMEOUT). They are limits, not measurements, and every bundled binary has one: they add up to
# 290 s, so that `run` stays under 5 minutes with the nvidia-smi query and the printing. The GPU
# tests' limits cover their CPU side (the FP64 references and CPU twins they compare with), which
# the fast MLA and the simple attention tests spend most of their time on. A new binary gets
# DEFAULT_BUDGET_S, and `build` names it: list it here and keep the sum at 290 or below.
declare -A BUDGETS=(
  [formats_gpu_test]=15 [gemm_gpu_test]=35 [fast_gemm_gpu_test]=20 [attention_gpu_test]=40
  [decode_fast_gqa_gpu_test]=15 [decode_fast_mla_gpu_test]=40 [append_kv_gpu_test]=10
  [tag_check_gpu_test]=10
  [attention_gpu_benchmark]=35 [gemm_gpu_benchmark]=40 [gqa_fast_benchmark]=15
  [integrity_check_gpu_benchmark]=15
)
DEFAULT_BUDGET_S=20

budget_of() { echo "${BUDGETS[$1]:-$DEFAULT_BUDGET_S}"; }

build() {
  set -e
  local mutants=0
  [ "${1:-}" != "--mutants" ] || mutants=1
  "$root/tools/bootstrap.sh"
  cd "$root"
  mapfile -t tests < <(bazel query 'attr(tags, "\bgpu\b", tests(//...))' 2>/dev/null)
  mapfile -t benchmarks < <(bazel query 'attr(tags, "\bgpu_benchmark\b", kind(cc_binary, //...))' 2>/dev/null)
  if [ ${#tests[@]} -eq 0 ]; then
    echo "gpu_check: no tests tagged gpu were found" >&2
    exit 1
  fi
  bazel build --config=bundle "${tests[@]}" "${benchmarks[@]}" //cli:kvsim
  rm -rf "$bundle"
  mkdir -p "$bundle/tests" "$bundle/benchmarks"
  for label in "${tests[@]}"; do
    cp "bazel-bin/$(label_path "$label")" "$bundle/tests/"
  done
  for label in "${benchmarks[@]}"; do
    cp "bazel-bin/$(label_path "$label")" "$bundle/benchmarks/"
  done
  cp "$root/tools/gpu_check.sh" "$bundle/gpu_check.sh"
  # The second, ranked script and what it runs: kvsim itself and the shipped configs.
  cp "$root/tools/gpu_check_extra.sh" "$bundle/gpu_check_extra.sh"
  cp bazel-bin/cli/kvsim "$bundle/kvsim-bin"
  cp -r "$root/configs" "$bundle/configs"
  # The static kernel report of the same commit (a failing gate is printed, not fatal, here: the
  # GPU run is what the bundle is for; ./test fails on it).
  bazel run //tools/kernel_report:kernel_report_table > "$bundle/kernel_report.md" 2>/dev/null || true
  git -C "$root" describe --always --dirty > "$bundle/COMMIT" 2>/dev/null || echo unknown > "$bundle/COMMIT"
  echo "gpu_check: bundle ready in $bundle ($(du -sh "$bundle" | cut -f1)):"
  find "$bundle" -type f -perm -u+x | sed "s|$bundle/|  |"
  # Every binary's time limit, and their sum, which must stay within the 5 minutes of `run`.
  local total=0 name
  for binary in "$bundle"/tests/* "$bundle"/benchmarks/*; do
    name="$(basename "$binary")"
    [ -n "${BUDGETS[$name]:-}" ] || echo "gpu_check: $name has no budget in BUDGETS; it gets ${DEFAULT_BUDGET_S} s" >&2
    total=$((total + $(budget_of "$name")))
  done
  echo "gpu_check: time budgets ${total} s in all"
  if [ "$total" -gt 290 ]; then
    echo "gpu_check: the budgets exceed 290 s; a run would pass 5 minutes" >&2
    exit 1
  fi
  local extra_sum extra_total
  read -r extra_sum extra_total < <("$bundle/gpu_check_extra.sh" budgets)
  echo "gpu_check: gpu_check.sh ${total} s + gpu_check_extra.sh ${extra_total} s (its parts' budgets ${extra_sum} s, hard stop at ${extra_total}) = $((total + extra_total)) s"
  # Anything beyond the C library and the driver (loaded at run time) would be missing there,
  # except cuBLAS (and the libgcc_s it needs), which benchmarks link dynamically: the GPU
  # machine's CUDA toolkit provides it (see run).
  for binary in "$bundle"/tests/* "$bundle"/benchmarks/* "$bundle/kvsim-bin"; do
    [ -f "$binary" ] || continue
    extra=$(ldd "$binary" | grep -vE 'linux-vdso|ld-linux|lib(c|m|dl|rt|pthread|gcc_s|cublas|cublasLt)\.so' || true)
    if [ -n "$extra" ]; then
      echo "gpu_check: $(basename "$binary") needs shared libraries the GPU machine may lack:" >&2
      echo "$extra" >&2
      exit 1
    fi
  done
  if [ "$mutants" -eq 1 ]; then
    # The runner reports "not run (no GPU here)" for each; the bundle carries them to one.
    "$root/tools/mutants/run.sh" --cuda --bundle "$bundle/mutants" || true
    echo "gpu_check: mutants bundled: $(ls "$bundle/mutants" | tr '\n' ' ')"
  fi
  # What travels to the GPU machine: the bundle packed (tests and benchmarks embed every kernel's
  # device code; it compresses about 4 to 1).
  tar czf "$root/.gpu-bundle.tar.gz" -C "$root" .gpu-bundle
  echo "gpu_check: packed as .gpu-bundle.tar.gz ($(du -sh "$root/.gpu-bundle.tar.gz" | cut -f1)); on the GPU machine: tools/gpu_check.sh device"
}

# Runs each bundled CUDA mutant's tests (from $here/mutants/NAME/) and prints a table: the tests
# that failed, which killed it, or SURVIVED. Returns the number of survivors.
run_mutants() {
  local here="$1" logs="$2" survivors=0 rows=()
  for dir in "$here"/mutants/*/; do
    [ -d "$dir" ] || continue
    local name killed=() skipped=0 result log
    name="$(basename "$dir")"
    for binary in "$dir"*; do
      [ -f "$binary" ] || continue
      log="$logs/mutant-$name-$(basename "$binary").log"
      if ! "$binary" --gtest_color=no > "$log" 2>&1; then
        killed+=("$(basename "$binary")")
      elif grep -q "SKIPPED" "$log"; then
        skipped=1
      fi
    done
    if [ ${#killed[@]} -gt 0 ]; then
      result="${killed[*]}"
    elif [ "$skipped" -eq 1 ]; then
      result="NOT RUN (a test skipped: no usable GPU)"; survivors=$((survivors + 1))
    else
      result="SURVIVED"; survivors=$((survivors + 1))
    fi
    rows+=("$(printf '%-40s %s' "$name" "$result")")
  done
  [ ${#rows[@]} -gt 0 ] || return 0
  echo
  echo "== CUDA mutants (tools/mutants/cuda/)"
  printf '%-40s %s\n' "mutant" "killed by"
  printf '%s\n' "${rows[@]}"
  return "$survivors"
}

# The configs/gpus/ name of the first GPU nvidia-smi lists (exact device names only, so an H100
# PCIe is not taken for the SXM part), or "unknown".
catalog_gpu() {
  case "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)" in
    "NVIDIA H200") echo h200-sxm ;;
    "NVIDIA H100 80GB HBM3") echo h100-sxm ;;
    "NVIDIA B200") echo b200 ;;
    *) echo unknown ;;
  esac
}

# //tests/kernels:formats_gpu_test -> tests/kernels/formats_gpu_test
label_path() {
  local label="${1#//}"
  echo "${label/://}"
}

run() {
  local here
  if [ -d "$bundle/tests" ]; then here="$bundle"; else here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"; fi
  if [ ! -d "$here/tests" ]; then
    echo "gpu_check: no bundle found; run 'tools/gpu_check.sh build' first" >&2
    exit 2
  fi
  local logs="${OUT:-$here/logs}"
  # RapidCheck properties in the GPU tests run pinned, as .bazelrc pins them for ./test.
  export RC_PARAMS="${RC_PARAMS:-max_success=500 seed=20261129}"
  mkdir -p "$logs"
  # cuBLAS (the benchmarks' BF16 baseline) comes from the machine's CUDA toolkit.
  export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # The GEMM benchmark's machine-readable table comes back with the logs.
  export KVSIM_GEMM_TABLE="$logs/gemm_table.yaml"
  rm -f "$KVSIM_GEMM_TABLE"  # a table left from an earlier run must not pass for this one's
  KVSIM_GPU="${KVSIM_GPU:-$(catalog_gpu)}"
  export KVSIM_GPU
  echo "bundle built from commit $(cat "$here/COMMIT" 2>/dev/null || echo unknown)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv 2>&1 || true
  local rows=() failed=0
  for binary in "$here"/tests/*; do
    local name start end status result
    name="$(basename "$binary")"
    start=$(date +%s%N)
    # The mma.sync-on-sm_90 comparison and the sanitizers' small cases are gpu_check_extra.sh's
    # (ranked there, in its own budget).
    timeout "$(budget_of "$name")" "$binary" --gtest_color=no \
      --gtest_filter='-*MmaSyncOnSm90EqualsWgmma:*SmallCaseForTheSanitizers' > "$logs/$name.log" 2>&1
    status=$?
    end=$(date +%s%N)
    if [ "$status" -eq 124 ]; then
      result="TIMEOUT"; failed=$((failed + 1))
    elif [ "$status" -ne 0 ]; then
      result="FAILED"; failed=$((failed + 1))
    elif grep -q "SKIPPED" "$logs/$name.log"; then
      result="SKIPPED"; failed=$((failed + 1))
    else
      result="PASSED"
    fi
    tail -n 30 "$logs/$name.log"
    rows+=("$(printf '%-40s %-8s %8.1fs' "$name" "$result" "$(awk -v ns=$((end - start)) 'BEGIN { print ns / 1e9 }')")")
  done
  for binary in "$here"/benchmarks/*; do
    [ -f "$binary" ] || continue
    local name
    name="$(basename "$binary")"
    start=$(date +%s%N)
    timeout "$(budget_of "$name")" "$binary" > "$logs/$name.txt" 2>&1
    status=$?
    end=$(date +%s%N)
    if [ "$status" -eq 0 ]; then
      result="RAN"
    elif [ "$status" -eq 124 ]; then
      result="TIMEOUT"; failed=$((failed + 1))
    else
      result="FAILED"; failed=$((failed + 1))
    fi
    rows+=("$(printf '%-40s %-8s %8.1fs' "$name" "$result" "$(awk -v ns=$((end - start)) 'BEGIN { print ns / 1e9 }')")")
  done
  for table in "$logs"/*.txt; do
    [ -f "$table" ] || continue
    echo; echo "== $(basename "$table" .txt)"; cat "$table"
  done
  local report="$here/kernel_report.md"
  if [ -f "$report" ]; then
    echo; echo "== static kernel report (built with the bundle)"; cat "$report"
  fi
  echo
  echo "== GPU check summary"
  printf '%-40s %-8s %9s\n' "binary" "result" "time"
  printf '%s\n' "${rows[@]}"
  # One line per benchmark verdict (the benchmarks print them as "summary: ...").
  grep -h '^summary: ' "$logs"/*.txt 2>/dev/null | sed 's/^summary: /  /' || true
  if [ -f "$report" ]; then
    echo "static kernel report: $(grep -E '^[0-9]+ kernels, ' "$report" || echo 'no verdict line (see above)')"
    grep -E '\| (pass|FAIL) \(' "$report" | awk -F'|' '{ printf "  %-44s issue %6s, shared %6s, tensor %6s TB/s  %s\n", $2, $16, $18, $19, $20 }' || true
  fi
  if [ -f "$KVSIM_GEMM_TABLE" ]; then
    echo "kernel table for $KVSIM_GPU: $KVSIM_GEMM_TABLE (review it, then copy it to configs/measured/$KVSIM_GPU.yaml)"
  fi
  echo "$failed failed or skipped"
  local survivors=0
  run_mutants "$here" "$logs" || survivors=$?
  [ "$survivors" -eq 0 ] || echo "$survivors CUDA mutants survived"
  [ "$failed" -eq 0 ] && [ "$survivors" -eq 0 ]
}

# The whole GPU check in one command on the GPU machine (see the top of this script).
device() {
  if [ ! -d "$bundle/tests" ]; then
    if [ ! -f "$root/.gpu-bundle.tar.gz" ]; then
      echo "gpu_check: no bundle here: run 'tools/gpu_check.sh build' where Bazel is, and bring .gpu-bundle.tar.gz" >&2
      exit 2
    fi
    tar xzf "$root/.gpu-bundle.tar.gz" -C "$root" || exit 2
  fi
  local back="${OUT:-$root/.gpu-results}" scratch first=0 second=0
  scratch="$(mktemp -d)"
  mkdir -p "$scratch/logs" "$back"
  OUT="$scratch/logs" "$bundle/gpu_check.sh" run >"$scratch/logs/gpu_check.txt" 2>&1 || first=$?
  OUT="$scratch/logs" "$bundle/gpu_check_extra.sh" run >"$scratch/logs/gpu_check_extra.txt" 2>&1 || second=$?
  {
    echo "GPU check of $(cat "$bundle/COMMIT" 2>/dev/null || echo 'an unknown commit'), $(date -u '+%Y-%m-%d %H:%M UTC')"
    sed -n '/^== GPU check summary/,$p' "$scratch/logs/gpu_check.txt"
    echo
    sed -n '/^== GPU check, second script/,$p' "$scratch/logs/gpu_check_extra.txt"
    if [ -f "$scratch/logs/benchmark_table.md" ]; then echo; cat "$scratch/logs/benchmark_table.md"; fi
    echo
    echo "gpu_check.sh exit $first, gpu_check_extra.sh exit $second; every log in logs.tar.gz"
  } >"$scratch/logs/summary.txt"
  tar czf "$back/logs.tar.gz" -C "$scratch" logs
  local file
  for file in gemm_table.yaml benchmark_table.md summary.txt; do
    [ ! -f "$scratch/logs/$file" ] || cp "$scratch/logs/$file" "$back/$file"
  done
  cat "$scratch/logs/summary.txt"
  rm -rf "$scratch"
  [ "$first" -eq 0 ] && [ "$second" -eq 0 ]
}

case "${1:-}" in
  build) build "${2:-}" ;;
  run) run ;;
  device) device ;;
  *)
    echo "usage: tools/gpu_check.sh build [--mutants] | run | device (see the comment at the top of this script)" >&2
    exit 2
    ;;
esac
