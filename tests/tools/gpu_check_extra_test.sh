#!/usr/bin/env bash
# tools/gpu_check_extra.sh on the CPU: its parts run in rank order with the CPU backend standing
# in where it can (the storm on both paths, compared step by step with a second CPU run), the
# others are skipped saying why; the step-by-step comparison fails on a log that differs; the
# CUDA-only parts pass with stand-ins for the GPU machine's tools; a part past its time is
# stopped, a part without its minimum left is dropped, and the summary says both.
set -uo pipefail
kvsim="$(pwd)/$1"
script=tools/gpu_check_extra.sh
failures=0
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# The real parts on the CPU backend.
out=$(KVSIM_BIN="$kvsim" KVSIM_EXTRA_BACKEND=cpu OUT="$tmp/cpu" "$script" run 2>&1)
code=$?
[ "$code" -eq 0 ] || fail "the CPU run exited $code: $out"
expected=(" 1  storm-backends +PASSED" " 2  storm-model-shape +SKIPPED"
  " 3  mla-mma-sync-on-sm90 +SKIPPED" " 4  sanitizers +SKIPPED" " 5  benchmark-table +SKIPPED"
  "sanitizers: skipped: needs the CUDA backend" "^0 failed$")
for line in "${expected[@]}"; do
  grep -qE -- "$line" <<<"$out" || fail "the CPU run lacks /$line/: $out"
done
[ "$(grep -cE "^figure: (simple|fast) path, cpu against cpu: 328 steps alike" "$tmp/cpu/part-storm-backends.log")" -eq 2 ] ||
  fail "no step-by-step comparison on each path: $(cat "$tmp/cpu/part-storm-backends.log")"
grep -q "decode attention 0 simple, [0-9,]* fast" "$tmp/cpu/storm-fast-tested.txt" ||
  fail "the storm did not run on the fast path"
grep -q "decode attention [0-9,]* simple, 0 fast" "$tmp/cpu/storm-simple-tested.txt" ||
  fail "the storm did not run on the simple path"

# The comparison: a log against itself passes; a changed cache hash, an output beyond its bound, a
# non-finite one or a missing step fails, naming it.
log="$tmp/cpu/storm-fast-cpu-log.txt"
"$script" compare-logs "$log" "$log" >/dev/null || fail "a log differs from itself"
# The log edited by sed script $1 must be refused with a message matching $2 ($3 names the edit).
expect_refused() {
  sed "$1" "$log" >"$tmp/edited.txt"
  local out
  out=$("$script" compare-logs "$log" "$tmp/edited.txt")
  [ $? -eq 1 ] && grep -q "$2" <<<"$out" || fail "$3 passed: $out"
}
expect_refused '7s/ cache 0x[0-9a-f]*/ cache 0x0123456789abcdef/' "line 7 differs in cache" \
  "a changed cache hash"
expect_refused '9s/ worst [0-9.]*/ worst 1.000001/' "line 9: worst" "an output beyond its bound"
expect_refused '11s/ gemm_worst [0-9.]*/ gemm_worst inf/' "line 11: gemm_worst" "a non-finite output"
expect_refused '$d' "differ in length" "a missing step"
sed '5s/ out 0x[0-9a-f]*/ out 0x0000000000000001/' "$log" >"$tmp/bits.txt"
out=$("$script" compare-logs "$log" "$tmp/bits.txt")
grep -q "the same bits on 327 of them" <<<"$out" || fail "output bits are not counted: $out"

# A hanging part is stopped at its budget and the next, with too little left, is dropped.
cat >"$tmp/hang" <<'EOS'
#!/usr/bin/env bash
sleep 30
EOS
chmod +x "$tmp/hang"
start=$(date +%s)
out=$(KVSIM_BIN="$tmp/hang" KVSIM_EXTRA_BACKEND=cpu KVSIM_EXTRA_TOTAL_S=4 \
  KVSIM_EXTRA_PARTS="storm-backends:2:1 sanitizers:5:3 benchmark-table:1:1" OUT="$tmp/hang-logs" \
  "$script" run 2>&1)
code=$?
elapsed=$(($(date +%s) - start))
[ "$code" -eq 1 ] || fail "a timed-out part should exit 1, got $code: $out"
[ "$elapsed" -le 8 ] || fail "the hard stop took ${elapsed} s of a 4 s total"
for line in " 1  storm-backends +TIMEOUT" " 2  sanitizers +DROPPED" " 3  benchmark-table +SKIPPED" \
  "dropped sanitizers: needs at least 3 s, [0-2] s left of 4" "storm-backends: stopped at its 2 s"; do
  grep -qE -- "$line" <<<"$out" || fail "the hard-stop run lacks /$line/: $out"
done

# A failing part fails the run and names its log.
printf '#!/usr/bin/env bash\nexit 1\n' >"$tmp/broken"
chmod +x "$tmp/broken"
out=$(KVSIM_BIN="$tmp/broken" KVSIM_EXTRA_BACKEND=cpu OUT="$tmp/broken-logs" "$script" run 2>&1)
[ $? -eq 1 ] || fail "a failing part should exit 1: $out"
grep -qE " 1  storm-backends +FAILED" <<<"$out" || fail "the failure is not in the table: $out"

# The CUDA-only parts' own logic, with stand-ins for what only a GPU machine has: a bundle whose
# kvsim runs the CPU backend when asked for CUDA, GPU tests and a benchmark that print what the
# real ones print, compute-sanitizer and nvidia-smi. Each part must pass and the table must carry
# the benchmark's summary under the device's name.
# The bundle sits inside a checkout, as `gpu_check.sh build` leaves it: the script must still take
# the bundle, not the checkout around it, as its root.
bundle="$tmp/checkout/.gpu-bundle"
mkdir -p "$bundle/tests" "$bundle/benchmarks" "$tmp/bin"
ln -s "$(pwd)/configs" "$tmp/checkout/configs"
cp "$script" "$bundle/gpu_check_extra.sh"
ln -s "$(pwd)/configs" "$bundle/configs"
echo "abc1234" >"$bundle/COMMIT"
cat >"$bundle/kvsim-bin" <<EOS
#!/usr/bin/env bash
args=()
for arg in "\$@"; do [ "\$arg" = cuda ] && arg=cpu; args+=("\$arg"); done
exec "$kvsim" "\${args[@]}"
EOS
for test in decode_fast_gqa_gpu_test decode_fast_mla_gpu_test fast_gemm_gpu_test tag_check_gpu_test; do
  cat >"$bundle/tests/$test" <<'EOS'
#!/usr/bin/env bash
case "$*" in
  *--gtest_list_tests*) printf 'Suite.\n  SmallCaseForTheSanitizers\n' ;;
  *MmaSyncOnSm90*) printf '64 heads: mma.sync and wgmma outputs the same bits in 9 of 10\n[  PASSED  ] 1 test.\n' ;;
  *) printf '[  PASSED  ] 1 test.\n' ;;
esac
EOS
done
printf '#!/usr/bin/env bash\necho "summary: stand-in benchmark 1.00x (target: met)"\n' >"$bundle/benchmarks/stand_in_benchmark"
printf '#!/usr/bin/env bash\nwhile [ "$1" != 9 ]; do shift; done; shift\n"$@" && echo "========= ERROR SUMMARY: 0 errors"\n' >"$tmp/bin/compute-sanitizer"
printf '#!/usr/bin/env bash\necho "NVIDIA H200, 570.00"\n' >"$tmp/bin/nvidia-smi"
chmod +x "$bundle/kvsim-bin" "$bundle"/tests/* "$bundle"/benchmarks/* "$tmp"/bin/*
out=$(PATH="$tmp/bin:$PATH" KVSIM_EXTRA_BACKEND=cuda OUT="$tmp/stand-in" \
  KVSIM_EXTRA_PARTS="storm-backends:60:10 mla-mma-sync-on-sm90:30:15 sanitizers:80:40 benchmark-table:40:5" \
  "$bundle/gpu_check_extra.sh" run 2>&1)
[ $? -eq 0 ] || fail "the stand-in CUDA run failed: $out"
for line in " 1  storm-backends +PASSED" " 2  mla-mma-sync-on-sm90 +PASSED" " 3  sanitizers +PASSED" \
  " 4  benchmark-table +PASSED"; do
  grep -qE -- "$line" <<<"$out" || fail "the stand-in CUDA run lacks /$line/: $out"
done
grep -q "^  64 heads: mma.sync and wgmma outputs the same bits in 9 of 10" <<<"$out" ||
  fail "the summary does not carry the mma.sync part's figure: $out"
[ "$(grep -c "ERROR SUMMARY: 0 errors" "$tmp/stand-in/part-sanitizers.log")" -eq 12 ] ||
  fail "not every tool ran on every test: $(cat "$tmp/stand-in/part-sanitizers.log")"
grep -q "^Benchmarks of abc1234 on NVIDIA H200, 570.00, 20" "$tmp/stand-in/benchmark_table.md" &&
  grep -q "^| stand_in_benchmark | stand-in benchmark 1.00x (target: met) |$" "$tmp/stand-in/benchmark_table.md" ||
  fail "the benchmark table is not as expected: $(cat "$tmp/stand-in/benchmark_table.md")"

# A machine whose compute-sanitizer refuses the device: the small cases run without it, and the
# part is skipped, saying so; a small case that fails then fails the part.
mkdir -p "$tmp/refusing"
printf '#!/usr/bin/env bash\necho "========= Error: Device not supported"\nexit 1\n' >"$tmp/refusing/compute-sanitizer"
chmod +x "$tmp/refusing/compute-sanitizer"
out=$(PATH="$tmp/refusing:$PATH" KVSIM_EXTRA_BACKEND=cuda OUT="$tmp/refused" \
  KVSIM_EXTRA_PARTS="sanitizers:80:40" "$bundle/gpu_check_extra.sh" run 2>&1)
grep -qE " 1  sanitizers +SKIPPED" <<<"$out" &&
  grep -q "compute-sanitizer refused the device; the small cases passed without it" <<<"$out" ||
  fail "a refused sanitizer is not a skip with the small cases run: $out"
cat >"$bundle/tests/tag_check_gpu_test" <<'EOS'
#!/usr/bin/env bash
case "$*" in
  *--gtest_list_tests*) printf 'Suite.\n  SmallCaseForTheSanitizers\n' ;;
  *) printf '[  FAILED  ] 1 test.\n'; exit 1 ;;
esac
EOS
out=$(PATH="$tmp/refusing:$PATH" KVSIM_EXTRA_BACKEND=cuda OUT="$tmp/refused2" \
  KVSIM_EXTRA_PARTS="sanitizers:80:40" "$bundle/gpu_check_extra.sh" run 2>&1)
grep -qE " 1  sanitizers +FAILED" <<<"$out" || fail "a failing small case passed: $out"

# The budgets `gpu_check.sh build` adds up: the parts' sum, within the total.
read -r sum total < <("$script" budgets)
[ "$sum" -le "$total" ] || fail "the parts' budgets ($sum s) exceed the total ($total s)"

[ "$failures" -eq 0 ] && echo "all gpu_check_extra checks passed"
exit $((failures > 0))
