#!/usr/bin/env bash
# The kvsim binary's contract: help and version exit 0; bad usage exits 2 with a message that says
# what is wrong; the demo is byte-for-byte reproducible from its seed.
set -uo pipefail
kvsim="$1"
failures=0
# The demo writes its plot here, not into the runfiles.
out="${TEST_TMPDIR:-$(mktemp -d)}"

# expect_exit and expect_no_match.
source tests/cli/cli_expect.sh

expect_exit 0 "Subcommands:" --help
expect_exit 0 "campaign +Fault-injection campaign" --help
expect_exit 0 "^kvsim [0-9]+\.[0-9]+\.[0-9]+" --version
expect_exit 0 "--seed" demo --help
expect_exit 2 "^kvsim: unknown option '--bogus' \(subcommands: demo, plan" --bogus
expect_exit 2 "^Run 'kvsim --help' for usage" --bogus
expect_exit 2 "kvsim: .*bogus.*subcommands: demo" bogus
expect_exit 2 "no subcommand given"
# Inside a subcommand, a usage error names it and points to its own --help.
expect_exit 2 "^kvsim plan: unknown option '--bogus'$" plan --bogus
expect_exit 2 "^Run 'kvsim plan --help' for usage" plan --bogus
expect_exit 2 "^kvsim plan: --model needs a value after it$" plan --model
expect_exit 2 "^kvsim demo: unexpected argument 'extra'$" demo extra
expect_exit 2 "^kvsim accuracy: kv: unknown option '--bogus'$" accuracy kv --bogus
expect_exit 2 "^Run 'kvsim accuracy kv --help' for usage" accuracy kv --bogus
expect_exit 2 "^kvsim accuracy: weights: unknown option '--bogus'$" accuracy weights --bogus
expect_exit 2 "^kvsim accuracy: unexpected argument 'bogus' \(subcommands: kv, weights\)" accuracy bogus
expect_exit 2 "^Run 'kvsim accuracy --help' for usage" accuracy bogus
expect_exit 2 "^Run 'kvsim accuracy --help' for usage" accuracy
expect_exit 2 "^Run 'kvsim plan --help' for usage" plan --gpu a100
expect_exit 2 "^kvsim run: unknown option '--scenario'" run --scenario x
expect_exit 2 "^kvsim demo: seed 'zz' has an invalid character 'z'" demo --seed zz
expect_exit 2 "--samples 0 is out of range; allowed: 1 to 16777216" demo --samples 0
expect_exit 2 "samples" demo --samples many
# The demo's closing campaign is cut to a few hundred cases where the demo runs only to be checked.
expect_exit 2 "--campaign-cases 0 is out of range" demo --campaign-cases 0
expect_exit 0 "Reproduce: kvsim demo --seed 0x2a --samples 1000 --campaign-cases 30000" \
  demo --seed 42 --samples 1000 --out "$out"
# One short demo shows each part: the campaign's R row, the integrity check's divergence, the
# storms, the capacity plot.
demo_short=$("$kvsim" demo --samples 100 --campaign-cases 600 --out "$out" 2>&1)
code=$?
[ "$code" -eq 0 ] || { echo "FAIL: the short demo exited $code"; failures=$((failures + 1)); }
for pattern in "R +5 +[0-9,]+ +[0-9,]+ +[0-9.]+% +[0-9,]+ +0\.0% +0$" \
  "B aborted: stale tag at logical page 1; A, C proceed" \
  "page-reuse-storm-bugs +tags +[0-9]+ +[1-9][0-9]* +0 +0 +0 +0$" \
  "Plot of decode tokens/s against concurrency: .*plan-demo.svg"; do
  grep -qE -- "$pattern" <<<"$demo_short" || {
    echo "FAIL: the short demo's output does not match /$pattern/"; failures=$((failures + 1)); }
done
[ -s "$out/plan-demo.svg" ] || { echo "FAIL: the demo wrote no plot"; failures=$((failures + 1)); }
# A plot that cannot be written: the demo runs to the end, then exits 3 (an output not written)
# saying why on stderr.
touch "$out/a-file"
stderr=$("$kvsim" demo --samples 16 --campaign-cases 16 --out "$out/a-file" 2>&1 >/dev/null)
code=$?
if [ "$code" -ne 3 ] || ! grep -q "^kvsim demo: the capacity plot was not written: cannot create" <<<"$stderr"; then
  echo "FAIL: demo with an unwritable plot exited $code; stderr: $stderr"; failures=$((failures + 1))
fi

# accuracy kv: the FP8 KV cache study through the kernels.
expect_exit 2 "^kvsim accuracy: kv: this size would take about 2.9 hours on the CPU backend \(64 requests x 32768 tokens x 2 attention kinds at about 2.5 ms each" \
  accuracy kv --requests 64 --tokens 32768 --backend cpu
expect_exit 0 "fp8_e4m3 +1\.0" accuracy kv --kind gqa --requests 1 --tokens 16
expect_exit 0 '"relative_rms"' accuracy kv --kind mla --requests 1 --tokens 8 --json
expect_exit 0 '"kernel_path": "fast"' accuracy kv --kind both --requests 1 --tokens 40 --kernel-path fast --json
expect_exit 0 "fast decode kernels" accuracy kv --kind gqa --requests 1 --tokens 16 --kernel-path fast
expect_exit 0 '"mla_products": "fp8"' accuracy kv --kind mla --requests 1 --tokens 70 --kernel-path fast --mla-products fp8 --json
expect_exit 2 "^kvsim accuracy: kv: --mla-products fp8 applies to the fast kernels; give --kernel-path fast$" \
  accuracy kv --mla-products fp8
expect_exit 2 "^kvsim accuracy: kv: --mla-products: unknown MLA products 'fp4'; allowed: auto, bf16, fp8$" \
  accuracy kv --kernel-path fast --mla-products fp4
expect_exit 2 "^kvsim accuracy: kv: --kernel-path: unknown kernel path 'x'; allowed: simple, fast$" \
  accuracy kv --kernel-path x
expect_exit 2 "^kvsim accuracy: kv: --kind 'xyz' is not known; allowed: gqa, mla, both" accuracy kv --kind xyz
expect_exit 2 "^Run 'kvsim accuracy kv --help' for usage" accuracy kv --kind xyz
expect_exit 2 "--tokens 0 is out of range; allowed: 1 to 32768" accuracy kv --tokens 0
expect_exit 2 "--requests 65 is out of range; allowed: 1 to 64" accuracy kv --requests 65
expect_exit 2 "unknown backend 'gpu'; allowed: auto, cpu, cuda" accuracy kv --backend gpu
kv_first=$("$kvsim" accuracy kv --kind gqa --requests 1 --tokens 32 --seed 7)
kv_second=$("$kvsim" accuracy kv --kind gqa --requests 1 --tokens 32 --seed 0x7)
if [ "$kv_first" != "$kv_second" ]; then
  echo "FAIL: the same seed gave different accuracy kv output"; failures=$((failures + 1))
fi

first=$("$kvsim" demo --seed 0x2a --samples 4096 --campaign-cases 300 --out "$out")
second=$("$kvsim" demo --seed 42 --samples 4096 --campaign-cases 300 --out "$out")
other=$("$kvsim" demo --seed 43 --samples 4096 --campaign-cases 300 --out "$out")
if [ "$first" != "$second" ]; then
  echo "FAIL: the same seed gave different demo output"; failures=$((failures + 1))
fi
if [ "$first" = "$other" ]; then
  echo "FAIL: different seeds gave identical demo output"; failures=$((failures + 1))
fi

# accuracy weights: the table, JSON, reproducibility, and bad options exit 2 naming what is allowed.
expect_exit 0 "int4 g128 asym bf16" accuracy weights --m 2 --k 256 --n 128
expect_exit 0 "Reproduce: kvsim accuracy weights --seed 0x7 --m 2 --k 256 --n 128 --scale-type fp32 --clip --backend cpu --kernel-path simple" \
  accuracy weights --seed 7 --m 2 --k 256 --n 128 --scale-type fp32 --clip
expect_exit 0 '"kernel_path": "fast"' accuracy weights --m 3 --k 256 --n 128 --kernel-path fast --json
expect_exit 2 "^kvsim accuracy: weights: --kernel-path: unknown kernel path 'bogus'; allowed: simple, fast$" \
  accuracy weights --kernel-path bogus
expect_exit 0 '"output_relative_rms"' accuracy weights --m 1 --k 128 --n 128 --json
expect_exit 2 "^kvsim accuracy: weights: --k 100 is not supported; allowed: a multiple of 128 from 128 to 16384" \
  accuracy weights --k 100
expect_exit 2 "--m 0 is out of range; allowed: 1 to 4096" accuracy weights --m 0
expect_exit 2 "unknown scale type 'fp16'; allowed: bf16, fp32" accuracy weights --scale-type fp16
expect_exit 2 "unknown backend 'gpu'; allowed: auto, cpu, cuda" accuracy weights --backend gpu
weights_first=$("$kvsim" accuracy weights --seed 9 --m 3 --k 256 --n 256)
weights_second=$("$kvsim" accuracy weights --seed 0x9 --m 3 --k 256 --n 256)
if [ "$weights_first" != "$weights_second" ]; then
  echo "FAIL: the same seed gave different accuracy weights output"; failures=$((failures + 1))
fi

# run and replay: a scenario by name, its report, and the replay that checks the state hash.
expect_exit 0 "Reproduce: kvsim run kimi-decode-fp8 --seed 0x7 --mode timing --backend cpu" \
  run kimi-decode-fp8 --seed 7 --backend cpu --json "$out/run.json" --csv "$out/run.csv"
expect_exit 0 "peak running 64" run kimi-decode-fp8 --backend cpu
expect_exit 0 "peak running 32" run kimi-decode-bf16 --backend cpu
expect_exit 0 "0 outside the bound" run page-reuse-storm --mode kernel --backend cpu
expect_exit 2 "unknown option '--trace'; did you mean --timeline\?" run kimi-decode-fp8 --trace x.json
expect_exit 1 "finding\(s\): the simulated server did what it must not" \
  run page-reuse-storm-bugs-unchecked --backend cpu
expect_exit 0 "replay: reproduced: state hash 0x[0-9a-f]+ and every field of the report" \
  replay "$out/run.json"
[ "$(head -c 3 "$out/run.csv")" = "id," ] || { echo "FAIL: no request CSV"; failures=$((failures + 1)); }
"$kvsim" run kimi-decode-fp8 --seed 7 --backend cpu --json "$out/run-again.json" >/dev/null
cmp -s "$out/run.json" "$out/run-again.json" || {
  echo "FAIL: the same seed gave a different JSON report"; failures=$((failures + 1)); }
# Across processes: the storm's state hash repeats for its seed and changes with another seed.
storm_a=$("$kvsim" run page-reuse-storm --seed 7 --backend cpu | grep "state hash")
storm_b=$("$kvsim" run page-reuse-storm --seed 7 --backend cpu | grep "state hash")
storm_c=$("$kvsim" run page-reuse-storm --seed 8 --backend cpu | grep "state hash")
[ -n "$storm_a" ] && [ "$storm_a" = "$storm_b" ] || {
  echo "FAIL: the same seed gave another state hash in another process"; failures=$((failures + 1)); }
[ "$storm_a" != "$storm_c" ] || {
  echo "FAIL: different seeds gave the same state hash"; failures=$((failures + 1)); }
# An edited report is refused by its checksum (exit 2); a run that comes out otherwise (here a
# GPU's bandwidth changed in a copy of the configs) did not reproduce (exit 1), naming the first
# field that differs.
sed 's/"state_hash": "0x[0-9a-f]*"/"state_hash": "0x1"/' "$out/run.json" >"$out/tampered.json"
expect_exit 2 "field 'checksum': 0x[0-9a-f]+ does not match the contents" replay "$out/tampered.json"
cp -r configs "$out/configs-edited"
sed -i 's/^memory_bandwidth_tb_s: .*/memory_bandwidth_tb_s: 3.3/' "$out/configs-edited/gpus/h200-sxm.yaml"
expect_exit 1 "the run did not reproduce: state hash 0x[0-9a-f]+, the report says 0x[0-9a-f]+; the first field that differs: simulated_s: " \
  replay "$out/run.json" --configs "$out/configs-edited"
expect_exit 0 "Plot: $out/storm.svg" run page-reuse-storm --backend cpu --plot "$out/storm.svg"
[ -s "$out/storm.svg" ] || { echo "FAIL: run --plot wrote no plot"; failures=$((failures + 1)); }
expect_exit 2 "plot file 'storm.txt' must end in .png or .svg" run page-reuse-storm --plot storm.txt
expect_exit 0 "simulated 1.9[0-9]+ s \(time limit\)" run page-reuse-storm --max-time-s 2
expect_exit 2 "no scenario 'nope' in configs/scenarios; available: .*kimi-decode-bf16" run nope
# With no scenario, and in its help, run lists the shipped scenarios, one line each.
expect_exit 2 "give a scenario.*shipped:" run
expect_exit 2 "  page-reuse-storm +16 clients churning a 64-page pool" run
expect_exit 0 "  kimi-decode-bf16 +Kimi K2.6 on 8xH200, BF16 KV cache" run --help
expect_exit 2 "unknown mode 'fast'; allowed: timing, kernel" run kimi-decode-bf16 --mode fast
expect_exit 2 "^Run 'kvsim run --help' for usage" run kimi-decode-bf16 --seed zz
expect_exit 2 "not a JSON report" replay configs/scenarios/kimi-decode-bf16.yaml
# A report of another format version is refused, naming both versions.
sed 's/"kvsim_report": [0-9]*/"kvsim_report": 1/' "$out/run.json" >"$out/old-format.json"
expect_exit 2 "a report of format version 1 \('kvsim_report'\); this kvsim reads version [0-9]+" \
  replay "$out/old-format.json"
# A run with a weakness planted in its checks says so, and replays with it.
expect_exit 1 "Reproduce: kvsim run page-reuse-storm .* --weaken table-after-check" \
  run page-reuse-storm --backend cpu --weaken table-after-check --json "$out/weak.json"
# Reproduced with its findings: the replay succeeds (the state hash covers the findings).
expect_exit 0 "replay: reproduced: state hash 0x[0-9a-f]+ and every field of the report, with its [0-9]+ finding\(s\) as recorded" \
  replay "$out/weak.json"
# Inputs must be regular files: a FIFO would block the run forever, a directory is no file.
mkfifo "$out/fifo.yaml"
expect_exit 2 "fifo.yaml: a FIFO, not a regular file; the scenario file must be one" \
  run "$out/fifo.yaml"
expect_exit 2 "fifo.yaml: a FIFO, not a regular file; the report must be one" \
  replay "$out/fifo.yaml"
expect_exit 2 ": a directory, not a regular file; the report must be one" campaign merge "$out"
# Outputs are checked before any work: none may overwrite the input, two may not share a file,
# and each needs its folder.
cp configs/scenarios/page-reuse-storm.yaml "$out/storm-copy.yaml"
expect_exit 2 "--json .*storm-copy.yaml: that is the scenario file, which it would overwrite" \
  run "$out/storm-copy.yaml" --json "$out/storm-copy.yaml"
expect_exit 2 "--csv .*same.out: the same file as --json" \
  run page-reuse-storm --json "$out/same.out" --csv "$out/./same.out"
expect_exit 2 "--json .*no-such-folder/r.json: folder '.*no-such-folder' does not exist" \
  run page-reuse-storm --json "$out/no-such-folder/r.json"
# An option given an empty value is bad usage, naming the option (it would otherwise mean the
# default), in every subcommand.
expect_exit 2 "kvsim run: --seed must not be empty" run page-reuse-storm --seed ""
expect_exit 2 "kvsim run: --json must not be empty" run page-reuse-storm --json ""
expect_exit 2 "kvsim plan: --gpu must not be empty" plan --gpu ""
# A run under an engine preset's rules names them, stops checking the file's stated figures,
# and replays with them; an unknown preset is bad usage.
expect_exit 0 "scheduler rules \(sglang engine\): reservation sglang" \
  run kimi-decode-bf16 --engine sglang --json "$out/engine.json"
expect_exit 0 "stated figures: not checked" run kimi-decode-bf16 --engine vllm-v1
expect_exit 0 "stated figures: 6 of 6 hold" run kimi-decode-bf16
expect_exit 0 "Reproduce: kvsim run kimi-decode-bf16 .* --engine sglang" replay "$out/engine.json"
expect_exit 2 "--engine: unknown engine 'vllm'; allowed: custom, vllm-v1, sglang, vidur" \
  run kimi-decode-bf16 --engine vllm

# Trace scenarios: Vidur's workload runs whole with none rejected, and replays; a malformed trace
# is bad input (exit 2) named by file and line.
expect_exit 0 "10,000 arrived, 10,000 finished, 0 cancelled \(0 retried\), 0 rejected" \
  run vidur-azure-conv --backend cpu --json "$out/vidur.json"
expect_exit 0 "replay: reproduced: state hash 0x[0-9a-f]+" replay "$out/vidur.json"
printf 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.1,374,44\n2023-11-16 18:15:47,x,1\n' \
  >"$out/bad-trace.csv"
sed -e "s#traces/azure-llm-2023-conv.csv#$out/bad-trace.csv#" -e 's/requests: 10000/requests: 2/' \
  configs/scenarios/vidur-azure-conv.yaml >"$out/bad-trace.yaml"
expect_exit 2 "bad-trace.csv:3: field 'ContextTokens': expected a whole number of tokens" \
  run "$out/bad-trace.yaml" --backend cpu

echo "$failures failure(s)"
[ "$failures" -eq 0 ]
