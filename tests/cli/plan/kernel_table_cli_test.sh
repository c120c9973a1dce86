#!/usr/bin/env bash
# `kvsim plan --kernel-table`: where the INT4 expert speed comes from, as --explain says it, the
# numbers without a table (the published efficiencies) and with the synthetic test fixture
# (changed), the configs/measured/ default, and the exit code and message of a bad or foreign
# table.
set -uo pipefail
kvsim="$1"
failures=0
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
fixture=tests/model/capacity/testdata/synthetic_kernel_table.yaml

# expect_exit and expect_no_match.
source tests/cli/cli_expect.sh

expect_exit 0 "--kernel-table" plan --help

# No table shipped (nothing measured on a GPU yet): the published efficiencies, said so.
assumed='weight-only 0\.69.*\[published efficiencies'
expect_exit 0 "$assumed: no kernel table at configs/measured/h200-sxm\.yaml\]" plan --explain
expect_exit 0 "$assumed: --kernel-table none\]" plan --explain --kernel-table none
expect_no_match "published efficiencies" plan --explain --model glm-5.2 --weights fp8
default_json=$("$kvsim" plan --json)
none_json=$("$kvsim" plan --json --kernel-table none)
fixture_json=$("$kvsim" plan --json --kernel-table "$fixture")
[ "$default_json" = "$none_json" ] || {
  echo "FAIL: no table and --kernel-table none give different plans"; failures=$((failures + 1))
}
[ "$default_json" != "$fixture_json" ] || {
  echo "FAIL: the fixture's table changed nothing"; failures=$((failures + 1))
}
expect_exit 0 '"step_time_source": "calibration kimi-k2\.6-8xh200 \(kimi-k2\.6 on 8 x h200-sxm\), kernel profile published"' \
  plan --json
expect_exit 0 '"step_time_source": "calibration .*; INT4 experts from TEST FIXTURE, not a measurement' \
  plan --json --kernel-table "$fixture"

# The fixture: labelled as one wherever it is applied, never as a measurement.
expect_exit 0 "routed experts = BF16 time of the same GEMMs [0-9.]+ ms / INT4 speed 0\.903 \(TEST FIXTURE, not a measurement \($fixture; shapes Kimi-K2\.6 gate_up, Kimi-K2\.6 down \(this model's experts\)\): BF16 time / INT4 time at 438 rows per expert, between m 256 \(1\.000\) and m 4096 \(0\.500\), linear in log m" \
  plan --explain --kernel-table "$fixture"
expect_exit 0 "INT4 speed 4\.000 .* at or below the smallest measured m 1: held at its ratio" \
  plan --explain --kernel-table "$fixture" --concurrency 1
expect_no_match "measured \(" plan --explain --kernel-table "$fixture"

# The default location: configs/measured/GPU.yaml, for that GPU only.
cp -r configs "$tmp/configs"
mkdir -p "$tmp/configs/measured"
cp "$fixture" "$tmp/configs/measured/h200-sxm.yaml"
expect_exit 0 "INT4 speed 0\.903 \(TEST FIXTURE, not a measurement \($tmp/configs/measured/h200-sxm\.yaml" \
  plan --configs "$tmp/configs" --explain
expect_exit 0 "$assumed: no kernel table at $tmp/configs/measured/b200\.yaml\]" \
  plan --configs "$tmp/configs" --explain --gpu b200
expect_exit 0 "$assumed: --kernel-table none\]" \
  plan --configs "$tmp/configs" --explain --kernel-table none

# Bad input: exit 2, naming the file, line, column and field, and what is allowed.
expect_exit 2 "kernel table for GPU 'h200-sxm' \(device 'none: synthetic test fixture'\), but this plan is for GPU 'b200'; a table applies only to the GPU it was measured on" \
  plan --kernel-table "$fixture" --gpu b200
expect_exit 2 "gpu=b200: .*this plan is for GPU 'b200'" \
  plan --kernel-table "$fixture" --compare gpu=h200-sxm,b200
expect_exit 2 "$tmp/no-such\.yaml: cannot open the file" plan --kernel-table "$tmp/no-such.yaml"
sed 's/{m: 16, int4_us: 20,/{m: 1, int4_us: 20,/' "$fixture" >"$tmp/unsorted.yaml"
expect_exit 2 "unsorted\.yaml:18:13: field 'shapes\[0\]\.rows\[1\]\.m': 1 follows m 1; rows must go by ascending m" \
  plan --kernel-table "$tmp/unsorted.yaml"
sed 's/^source: test_fixture/source: guessed/' "$fixture" >"$tmp/source.yaml"
expect_exit 2 "source\.yaml:8:9: field 'source': 'guessed' is not allowed; one of: gpu_benchmark, test_fixture" \
  plan --kernel-table "$tmp/source.yaml"
sed 's/bf16_us: 40, int4_speedup_over_bf16: 4,/bf16_us: 40, int4_speedup_over_bf16: 3,/' "$fixture" >"$tmp/ratio.yaml"
expect_exit 2 "ratio\.yaml:17:78: field 'shapes\[0\]\.rows\[0\]\.int4_speedup_over_bf16': 3 disagrees with bf16_us / int4_us = 4" \
  plan --kernel-table "$tmp/ratio.yaml"
# A broken default-location table is an error too, not silently the assumption.
printf 'kind: kvsim_gemm_table\n' >"$tmp/configs/measured/h200-sxm.yaml"
expect_exit 2 "measured/h200-sxm\.yaml:.*field 'version': missing" plan --configs "$tmp/configs"

echo "$failures failure(s)"
[ "$failures" -eq 0 ]
