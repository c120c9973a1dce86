#!/usr/bin/env bash
# `tools/gpu_check.sh device`, the whole GPU check in one command on the GPU machine, with
# stand-ins for the bundle's two scripts: it unpacks .gpu-bundle.tar.gz, runs both scripts with
# their logs in a scratch folder, leaves logs.tar.gz, the GEMM table, the benchmark table and
# summary.txt in $OUT, prints both summaries last, and fails when either script failed; without a
# bundle it says how to make one and exits 2.
set -uo pipefail
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

root="$tmp/root"
mkdir -p "$root/tools" "$root/.gpu-bundle/tests"
cp tools/gpu_check.sh "$root/tools/gpu_check.sh"
echo "abc1234" >"$root/.gpu-bundle/COMMIT"
cat >"$root/.gpu-bundle/gpu_check.sh" <<'EOS'
#!/usr/bin/env bash
echo "a long log of every test"
echo "kernels: m 1" >"$OUT/gemm_table.yaml"
printf '== GPU check summary\nformats_gpu_test PASSED 1.0s\n0 failed or skipped\n'
EOS
cat >"$root/.gpu-bundle/gpu_check_extra.sh" <<'EOS'
#!/usr/bin/env bash
echo "| stand_in | 1.00x |" >"$OUT/benchmark_table.md"
printf '== GPU check, second script (ranked; hard stop at 240 s)\n 1  storm-backends PASSED 4.0\n'
exit "${STAND_IN_EXTRA_EXIT:-0}"
EOS
chmod +x "$root/.gpu-bundle"/*.sh
tar czf "$root/.gpu-bundle.tar.gz" -C "$root" .gpu-bundle
rm -rf "$root/.gpu-bundle"

out=$(OUT="$tmp/out" "$root/tools/gpu_check.sh" device 2>&1)
[ $? -eq 0 ] || fail "the device run failed: $out"
[ -x "$root/.gpu-bundle/gpu_check.sh" ] || fail "the bundle was not unpacked"
for file in logs.tar.gz gemm_table.yaml benchmark_table.md summary.txt; do
  [ -s "$tmp/out/$file" ] || fail "$file is not in \$OUT: $(ls "$tmp/out")"
done
[ "$(ls "$tmp/out" | wc -l)" -eq 4 ] || fail "more than the four files in \$OUT: $(ls "$tmp/out")"
tar tzf "$tmp/out/logs.tar.gz" | grep -q "logs/gpu_check.txt" || fail "the first script's log is not packed"
grep -q "a long log" <<<"$out" && fail "the first script's full log was printed"
tail -n 12 <<<"$out" | grep -q "^GPU check of abc1234" || fail "the summary does not name the commit: $out"
for line in "formats_gpu_test PASSED" "storm-backends PASSED" "| stand_in | 1.00x |" \
  "gpu_check.sh exit 0, gpu_check_extra.sh exit 0"; do
  grep -qF -- "$line" <<<"$out" || fail "the summary lacks '$line': $out"
done

# A failing second script fails the run, and says so.
out=$(STAND_IN_EXTRA_EXIT=1 OUT="$tmp/out2" "$root/tools/gpu_check.sh" device 2>&1)
[ $? -eq 1 ] || fail "a failing second script should fail the run: $out"
grep -q "gpu_check_extra.sh exit 1" <<<"$out" || fail "the failure is not in the summary: $out"

# Without a bundle: how to make one, exit 2.
rm -rf "$root/.gpu-bundle" "$root/.gpu-bundle.tar.gz"
out=$(OUT="$tmp/out3" "$root/tools/gpu_check.sh" device 2>&1)
[ $? -eq 2 ] || fail "no bundle should exit 2: $out"
grep -q "run 'tools/gpu_check.sh build' where Bazel is" <<<"$out" || fail "no advice: $out"

[ "$failures" -eq 0 ] && echo "all gpu_check device checks passed"
exit $((failures > 0))
