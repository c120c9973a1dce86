#!/usr/bin/env bash
# The kvsim binary's contract: help and version exit 0; bad usage exits 2 with a message that says
# what is wrong; the demo is byte-for-byte reproducible from its seed.
set -uo pipefail
kvsim="$1"
failures=0

# expect_exit CODE PATTERN ARGS...: runs kvsim ARGS, checks the exit code and that the combined
# output matches the extended regular expression PATTERN.
expect_exit() {
  local want="$1" pattern="$2"
  shift 2
  local output code
  output=$("$kvsim" "$@" 2>&1)
  code=$?
  if [ "$code" -ne "$want" ]; then
    echo "FAIL: kvsim $* exited $code, expected $want; output:"; echo "$output"
    failures=$((failures + 1))
  elif ! grep -qE -- "$pattern" <<<"$output"; then
    echo "FAIL: kvsim $* output does not match /$pattern/; output:"; echo "$output"
    failures=$((failures + 1))
  fi
}

expect_exit 0 "Subcommands:" --help
expect_exit 0 "plan .*not in this version yet" --help
expect_exit 0 "^kvsim [0-9]+\.[0-9]+\.[0-9]+" --version
expect_exit 0 "--seed" demo --help
expect_exit 2 "^kvsim: .*not expected: --bogus" --bogus
expect_exit 2 "^Run 'kvsim --help' for usage" --bogus
expect_exit 2 "kvsim: .*bogus.*subcommands: demo" bogus
expect_exit 2 "no subcommand given"
expect_exit 2 "^kvsim plan: 'plan' is not in this version of kvsim yet" plan --model x
expect_exit 2 "^kvsim demo: seed 'zz' has an invalid character 'z'" demo --seed zz
expect_exit 2 "--samples 0 is out of range; allowed: 1 to 16777216" demo --samples 0
expect_exit 2 "samples" demo --samples many
expect_exit 0 "Reproduce: kvsim demo --seed 0x2a --samples 1000" demo --seed 42 --samples 1000

# accuracy kv: the FP8 KV cache study through the kernels.
expect_exit 0 "e4m3 per-tensor +1\.0" accuracy kv --kind gqa --requests 1 --tokens 16
expect_exit 0 '"relative_rms"' accuracy kv --kind mla --requests 1 --tokens 8 --json
expect_exit 2 "^kvsim accuracy: kv: --kind 'xyz' is not known; allowed: gqa, mla, both" accuracy kv --kind xyz
expect_exit 2 "--tokens 0 is out of range; allowed: 1 to 32768" accuracy kv --tokens 0
expect_exit 2 "--requests 65 is out of range; allowed: 1 to 64" accuracy kv --requests 65
expect_exit 2 "unknown backend 'gpu'; allowed: auto, cpu, cuda" accuracy kv --backend gpu
kv_first=$("$kvsim" accuracy kv --kind gqa --requests 1 --tokens 32 --seed 7)
kv_second=$("$kvsim" accuracy kv --kind gqa --requests 1 --tokens 32 --seed 0x7)
if [ "$kv_first" != "$kv_second" ]; then
  echo "FAIL: the same seed gave different accuracy kv output"; failures=$((failures + 1))
fi

first=$("$kvsim" demo --seed 0x2a --samples 4096)
second=$("$kvsim" demo --seed 42 --samples 4096)
other=$("$kvsim" demo --seed 43 --samples 4096)
if [ "$first" != "$second" ]; then
  echo "FAIL: the same seed gave different demo output"; failures=$((failures + 1))
fi
if [ "$first" = "$other" ]; then
  echo "FAIL: different seeds gave identical demo output"; failures=$((failures + 1))
fi

echo "$failures failure(s)"
[ "$failures" -eq 0 ]
