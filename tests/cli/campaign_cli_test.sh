#!/usr/bin/env bash
# kvsim campaign's contract: a small campaign runs with no surprise; a case replays on its own,
# printing its drawn knobs; shards merge into the campaign run whole; bad usage exits 2.
set -uo pipefail
kvsim="$1"
failures=0
out="${TEST_TMPDIR:-$(mktemp -d)}"
source tests/cli/cli_expect.sh

small=(campaign --cases 45 --seed 9 --jobs 2 --out "$out/surprises")
expect_exit 0 "45 cases \(45 run here: shard 0 of 1\).*135 runs" "${small[@]}" --json "$out/whole.json"
expect_exit 0 "double_free +RW +tags" "${small[@]}"
expect_exit 0 "surprises: none" "${small[@]}"
expect_exit 0 "coverage: fault sites that fired" "${small[@]}"
# By class: with the tags, no R run corrupts silently, and nothing is a false alarm.
expect_exit 0 \
  "^  R +tags +[0-9,]+ +[0-9,]+ +[0-9,]+ +[0-9,]+ +[0-9,]+ +0 +(0\.0%|-) +0 +[0-9,]+ +[0-9,]+ +0$" \
  "${small[@]}"
# The paired figure: of the R cases that corrupted with no check, none did with the tags.
expect_exit 0 "^  R +timing +[0-9,]+ +0 +(0\.0%|-) +0 +(0\.0%|-)$" "${small[@]}"
# One case on its own: every knob it drew, then one line per tracker mode.
expect_exit 0 "case 4 \(arm transfer_abort_frees\)" campaign --cases 45 --seed 9 --case 4
expect_exit 0 "\| +transfer_abort_frees: 1|\| +transfer_abort_frees: 0\.[0-9]+" \
  campaign --cases 45 --seed 9 --case 4
expect_exit 0 "seal \(timing mode\): fired .* as the catalogue expects" \
  campaign --cases 45 --seed 9 --case 4
# The campaign can fail: each weakness planted in the checks makes the same small campaign exit 1,
# naming the surprise it causes and the one-line replay with the weakness in it.
weakened=(campaign --cases 45 --seed 9 --jobs 2 --max-shrinks 0 --out "$out/weakened")
expect_exit 1 "over-refusal: over-refusal at step .*weakened to refuse every row" \
  "${weakened[@]}" --weaken refuse-after-fault
expect_exit 1 "\(async_free_before_write, tags, timing mode\): silent corruption: silent write .*: wrong page" \
  "${weakened[@]}" --weaken skip-write-check
expect_exit 1 "\((read_past_length|committed_ahead_of_writes|publish_before_written), seal, timing mode\): silent corruption: .*: unwritten" \
  "${weakened[@]}" --weaken seal-one-slot-short
expect_exit 1 "\(clean, tags, timing mode\): silent corruption: silent write .*: wrong page" \
  "${weakened[@]}" --weaken table-after-check
expect_exit 1 "\(duplicate_not_rewritten, tags, timing mode\): silent corruption: .*: wrong page" \
  "${weakened[@]}" --weaken books-follow-tags
# A copy out to the KV store checked only when it starts misses the pages freed under it: every
# page is still the request's then; the check when the copy completes is the layer that catches it.
expect_exit 1 "\(store_reads_freed_pages, tags, timing mode\): silent corruption: silent read .*: wrong page" \
  "${weakened[@]}" --weaken store-checked-at-start
expect_exit 1 "replay: kvsim campaign .* --weaken books-follow-tags --case 1" \
  "${weakened[@]}" --weaken books-follow-tags
# A merge never writes over one of its own shards.
expect_exit 2 "--json .*shard0.json: that is a shard given to merge, which it would overwrite" \
  campaign merge "$out/shard0.json" --json "$out/shard0.json"
# Case numbers and worker counts out of range are refused, not read as "all" or "the cores".
expect_exit 2 "--case: a case number is 0 or more, not -5" campaign --cases 10 --case -5
expect_exit 2 "--jobs: Value -100 not in range 1 to 4096" campaign --cases 10 --jobs -100
expect_exit 2 "--modes must not be empty" campaign --cases 10 --modes ""
expect_exit 2 "unknown weakness 'weak'; allowed: none, refuse-after-fault" \
  "${weakened[@]}" --weaken weak
# Shards, merged, are the campaign run whole.
"$kvsim" "${small[@]}" --shard 0/2 --json "$out/shard0.json" >/dev/null
TEST_SHARD_INDEX=1 TEST_TOTAL_SHARDS=2 "$kvsim" "${small[@]}" --shard env \
  --json "$out/shard1.json" >"$out/shard1.txt"
grep -q "shard 1/2 from the Bazel test sharding environment" "$out/shard1.txt" || {
  echo "FAIL: --shard env did not take Bazel's shard"; failures=$((failures + 1))
}
expect_exit 1 "1 of 2 shards merged: the campaign is not whole" campaign merge "$out/shard0.json"
expect_exit 0 "45 cases \(45 run here: shards 0,1 of 2\)" \
  campaign merge "$out/shard0.json" "$out/shard1.json" --json "$out/merged.json"
strip() { grep -v -e '"wall_s"' -e '"checksum"' -e '"shard_count"' -e '^    [01],\?$' -e '"shards"' "$1"; }
diff <(strip "$out/whole.json") <(strip "$out/merged.json") >/dev/null || {
  echo "FAIL: merged shards differ from the campaign run whole"; failures=$((failures + 1))
}
expect_exit 2 "shard 0 of 2 is given twice" campaign merge "$out/shard0.json" "$out/shard0.json"
# Bad usage.
expect_exit 2 "unknown arm 'dubble_free'" campaign --arms clean,dubble_free
expect_exit 2 "unknown tracker mode 'on'; allowed: off, tags, seal" campaign --modes on
expect_exit 2 "shard '2/2' is not i/n" campaign --shard 2/2
expect_exit 2 "no shard in the environment" campaign --shard env
expect_exit 2 "cases 0 is out of range" campaign --cases 0
expect_exit 2 "--case 50 is out of range" campaign --cases 45 --case 50
expect_exit 2 "no scenario 'nope'" campaign --bases nope
expect_exit 2 "not a JSON campaign report" campaign merge configs/scenarios/campaign-pd.yaml
expect_exit 0 "TEST_SHARD_INDEX" campaign --help
# Output paths are checked before any case runs, and may not name a base scenario.
expect_exit 2 "--json $out/no-such-folder/c.json: folder '.*no-such-folder' does not exist" \
  campaign --cases 1000000 --json "$out/no-such-folder/c.json"
cp configs/scenarios/campaign-unified.yaml "$out/base.yaml"
expect_exit 2 "--json $out/base.yaml: that is a base scenario, which it would overwrite" \
  campaign --cases 1000000 --bases "$out/base.yaml" --json "$out/base.yaml"
# A --out that cannot be made loses no result: the table and the JSON are written, the run says so.
expect_exit 1 "the surprises' scenario files were not written: /proc/kvsim-no-such" \
  campaign --cases 16 --seed 9 --weaken table-after-check --max-shrinks 0 \
  --out /proc/kvsim-no-such --json "$out/weak-no-out.json"
[ -s "$out/weak-no-out.json" ] || {
  echo "FAIL: a campaign whose --out failed wrote no JSON"; failures=$((failures + 1)); }

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all campaign CLI checks passed"
