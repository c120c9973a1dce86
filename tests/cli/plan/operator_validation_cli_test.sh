#!/usr/bin/env bash
# `kvsim plan --validate-operators` and `--operator-profiles` end to end on Vidur's shipped
# profiles: the held-out figures docs/capacity-validation.md publishes, plans from a user's own
# profiles with the provenance line, and the exit code and message of every bad input.
set -uo pipefail
kvsim="$1"
failures=0
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
source tests/cli/cli_expect.sh

expect_exit 0 "--validate-operators" plan --help
out=$("$kvsim" plan --validate-operators 2>&1)
code=$?
[ "$code" -eq 0 ] || { echo "FAIL: --validate-operators exited $code"; failures=$((failures + 1)); }
# Held out on H100, as the docs publish them: rows, median, p90.
for line in "h100-sxm +all +attention projections +10,962 +7\.4% +19\.4%" \
  "h100-sxm +all +MLP projections +10,962 +8\.0% +22\.0%" \
  "h100-sxm +- +all-reduce +2,982 +6\.3% +19\.7%" \
  "h100-sxm +fitted +0\.844 +0\.788 +7\.33 +30\.4" \
  "operator profiles: .*vidur_profiles \(16 files, 136,932 rows"; do
  grep -qE -- "$line" <<<"$out" || { echo "FAIL: --validate-operators lacks /$line/"; failures=$((failures + 1)); }
done
expect_exit 0 '"held_out": \[' plan --validate-operators --json

# Plans from measured profiles: the fitted figures, named in every output.
expect_exit 0 "step times fitted to: .*from operator profiles third_party/vidur_profiles" \
  plan --operator-profiles third_party/vidur_profiles --operator-gpu h100-sxm --concurrency 1
expect_exit 0 '"step_time_source": ".*operator profiles third_party/vidur_profiles' \
  plan --operator-profiles third_party/vidur_profiles --operator-gpu h100-sxm --json \
  --concurrency 1
expect_exit 0 "memory efficiency 0\.844 and compute 0\.788 fitted to 21924 GEMM rows, all-reduce latency 30\.4 us fitted to 2982 all-reduces" \
  plan --calibration-report --operator-profiles third_party/vidur_profiles --operator-gpu h100-sxm
# A user's folder with one GPU kind plans any GPU with that kind's figures.
mine="$tmp/mine/compute/h100/meta-llama/Llama-2-7b-hf"
mkdir -p "$mine"
cp third_party/vidur_profiles/compute/h100/meta-llama/Llama-2-7b-hf/mlp.csv "$mine/"
expect_exit 0 "compute 0\.795 fitted to 4176 GEMM rows, all-reduce latency 6\.0 us the kernel profile's \(no all-reduce rows\), from operator profiles $tmp/mine \(1 files, content [0-9a-f]{16}; GPU h100-sxm\)" \
  plan --operator-profiles "$tmp/mine" --concurrency 1

# The fitted profile saved as YAML: a calibration file naming it plans the same.
expect_exit 0 "kernel profile published-fitted-h100-sxm" plan --operator-profiles \
  third_party/vidur_profiles --operator-gpu h100-sxm --save-kernel-profile "$tmp/fit.yaml" \
  --concurrency 1
sed "s|^kernels: published|kernels: $tmp/fit.yaml|" configs/calibration/kimi-k2.6-8xh200.yaml \
  >"$tmp/calibration.yaml"
expect_exit 0 "kernel_latency_us +1\.299 " plan --calibration-report --calibration "$tmp/calibration.yaml"
expect_exit 2 "--save-kernel-profile writes the profile --operator-profiles fits" \
  plan --save-kernel-profile "$tmp/x.yaml"
expect_exit 2 "--save-kernel-profile" plan --operator-profiles third_party/vidur_profiles \
  --operator-gpu h100-sxm --save-kernel-profile "$tmp/no/such/folder/x.yaml"

# Bad input: exit 2 naming the file, line and column, or what goes together.
bad="$tmp/bad/compute/h100/org/m"
mkdir -p "$bad"
sed -E '3s/,[0-9]+,([0-9]+)$/,4k,\1/' "$mine/mlp.csv" >"$bad/mlp.csv"
expect_exit 2 "bad/compute/h100/org/m/mlp.csv:3: column 'num_tokens': '4k' is not allowed; an integer 1 to" \
  plan --validate-operators --operator-profiles "$tmp/bad"
expect_exit 2 "not a folder of operator profiles" plan --operator-profiles "$tmp/none"
expect_exit 2 "several GPU kinds \(a100-sxm-80gb, h100-sxm\) and none is the planned h200-sxm" \
  plan --operator-profiles third_party/vidur_profiles
expect_exit 2 "--operator-gpu needs --operator-profiles" plan --operator-gpu h100-sxm
expect_exit 2 "--compare does not go with it" plan --validate-operators --compare kv-format=bf16,fp8_e4m3
expect_exit 2 "not both" plan --validate-operators --calibration-report
expect_exit 2 "--operator-profiles must not be empty" plan --operator-profiles ""

[ "$failures" -eq 0 ] && echo "all operator validation CLI checks passed"
exit $((failures > 0))
