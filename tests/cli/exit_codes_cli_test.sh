#!/usr/bin/env bash
# The exit-code table (cli/exit_codes.cc) holds: for every subcommand, one case of each code it
# can give, and the README carries the table `kvsim --help` prints, row for row. Code 3 (an output
# not written) comes from /dev/full, a device that refuses every write. Demo's code 1 is a bug in
# kvsim, with no input that gives it; accuracy's code 1 needs a machine without a usable GPU.
set -uo pipefail
kvsim="$1"
readme="$2"
failures=0
out="${TEST_TMPDIR:-$(mktemp -d)}"
source tests/cli/cli_expect.sh

# demo
expect_exit 0 "Reproduce: kvsim demo --seed 0x5eed --samples 1" demo --samples 1 --campaign-cases 16 --out "$out"
expect_exit 2 "unexpected argument 'extra'" demo extra
out_full() { "$kvsim" "$@" >/dev/full 2>"$out/err"; echo $?; }
check_full() {
  local code
  code=$(out_full "$@")
  if [ "$code" -ne 3 ] || ! grep -q "writing to standard output failed" "$out/err"; then
    echo "FAIL: kvsim $* >/dev/full exited $code, expected 3: $(cat "$out/err")"
    failures=$((failures + 1))
  fi
}
check_full demo --samples 1 --campaign-cases 16 --out "$out"

# plan
expect_exit 0 "tokens" plan
expect_exit 1 "weights do not fit" plan --model kimi-k2.6 --gpus 1 --tp 1
expect_exit 2 "unknown option '--bogus'" plan --bogus
check_full plan

# accuracy kv and weights (code 1: the CUDA backend where no GPU is usable)
tiny_kv=(accuracy kv --requests 1 --tokens 16)
expect_exit 0 "e4m3" "${tiny_kv[@]}"
expect_exit 0 "int4" accuracy weights
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi >/dev/null 2>&1; then
  expect_exit 1 "no usable CUDA device" "${tiny_kv[@]}" --backend cuda
  expect_exit 1 "no usable CUDA device" accuracy weights --backend cuda
fi
expect_exit 2 "unknown option '--bogus'" accuracy kv --bogus
expect_exit 2 "unknown option '--bogus'" accuracy weights --bogus
check_full "${tiny_kv[@]}"
check_full accuracy weights

# run
expect_exit 0 "findings: 0" run cancel-and-retry --json "$out/run.json"
expect_exit 1 "finding\(s\): the simulated server did what it must not" \
  run page-reuse-storm-bugs-unchecked
expect_exit 2 "no scenario 'nope'" run nope
expect_exit 2 "--kernel-log $out/k.txt: the log is of kernel mode's data plane; add --mode kernel" \
  run cancel-and-retry --kernel-log "$out/k.txt"
expect_exit 3 "--csv /dev/full: writing failed \(No space left on device\); nothing was written" \
  run cancel-and-retry --csv /dev/full
# A file an earlier run wrote is never left half-overwritten: the new one replaces it whole.
cp "$out/run.json" "$out/before.json"
expect_exit 3 "--csv /dev/full" run cancel-and-retry --json "$out/run.json" --csv /dev/full
cmp -s "$out/run.json" "$out/before.json" || {
  echo "FAIL: the JSON written beside a failed --csv differs from the same run's"
  failures=$((failures + 1))
}
ls "$out"/*.tmp* >/dev/null 2>&1 && { echo "FAIL: a temporary file was left"; failures=$((failures + 1)); }

# replay
expect_exit 0 "replay: reproduced" replay "$out/run.json"
cp -r configs "$out/configs-edited"
sed -i 's/^memory_bandwidth_tb_s: .*/memory_bandwidth_tb_s: 3.3/' "$out/configs-edited/gpus/h200-sxm.yaml"
expect_exit 1 "did not reproduce.*the first field that differs" \
  replay "$out/run.json" --configs "$out/configs-edited"
sed 's/"finished": \([0-9]*\)/"finished": 1\1/' "$out/run.json" >"$out/edited.json"
expect_exit 2 "field 'checksum'" replay "$out/edited.json"
check_full replay "$out/run.json"

# campaign
expect_exit 0 "surprises: none" campaign --cases 16 --json "$out/c.json"
expect_exit 1 "surprise\(s\): see above" campaign --cases 16 --weaken table-after-check \
  --max-shrinks 0 --out "$out/weak" --json "$out/weak.json"
[ -s "$out/weak.json" ] || { echo "FAIL: a campaign with surprises wrote no JSON"; failures=$((failures + 1)); }
expect_exit 2 "cases" campaign --cases 0
expect_exit 3 "--json /dev/full: writing failed" campaign --cases 16 --json /dev/full

# campaign merge
"$kvsim" campaign --cases 20 --shard 0/2 --json "$out/s0.json" >/dev/null 2>&1
"$kvsim" campaign --cases 20 --shard 1/2 --json "$out/s1.json" >/dev/null 2>&1
expect_exit 0 "surprises: none" campaign merge "$out/s0.json" "$out/s1.json"
expect_exit 1 "1 of 2 shards merged: the campaign is not whole" campaign merge "$out/s0.json"
expect_exit 2 "shard 0 of 2 is given twice" campaign merge "$out/s0.json" "$out/s0.json"
expect_exit 3 "--json /dev/full: writing failed" \
  campaign merge "$out/s0.json" "$out/s1.json" --json /dev/full

# The README's table is the one the binary prints.
"$kvsim" --help | sed -n '/^| command | 0 | 1 | 2 | 3 |$/,/^Code 3, everywhere/p' >"$out/table.md"
[ "$(wc -l <"$out/table.md")" -ge 10 ] || { echo "FAIL: no exit-code table in --help"; failures=$((failures + 1)); }
while IFS= read -r line; do
  grep -qxF -- "$line" "$readme" || {
    echo "FAIL: README.md lacks the exit-code table line: $line"; failures=$((failures + 1)); }
done <"$out/table.md"

echo "$failures failure(s)"
[ "$failures" -eq 0 ]
