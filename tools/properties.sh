#!/usr/bin/env bash
# tools/properties.sh [--cases N] [--seed S] [BAZEL OPTIONS]: every RapidCheck property of the
# default suite (each test that depends on RapidCheck, less those tagged manual or gpu) with a fresh
# seed and N cases (default 10000) instead of ./test's pinned RC_PARAMS (500 cases, one seed).
# Prints the seed first and, last, the line that repeats the run; a failing property prints its
# own RC_PARAMS="reproduce=..." line in its log. Properties that take a fraction of max_success
# (the simulation properties) scale with it.
#
#   tools/properties.sh                  # 10,000 cases each, a seed drawn from /dev/urandom
#   tools/properties.sh --cases 100000 --seed 0x5eed
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cases=10000
seed=""
bazel_options=()
while [ $# -gt 0 ]; do
  case "$1" in
    --cases) cases="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    *) bazel_options+=("$1"); shift ;;
  esac
done
if ! [[ "$cases" =~ ^[1-9][0-9]*$ ]]; then
  echo "properties: --cases must be a positive integer, not '$cases'" >&2
  exit 2
fi
# RapidCheck takes a decimal seed.
[ -n "$seed" ] || seed=$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')
seed=$((seed))
if [ "$seed" -lt 0 ]; then seed=$(printf '%u' "$seed"); fi

"$root/tools/bootstrap.sh"
cd "$root"
mapfile -t targets < <(bazel query \
  'kind("cc_test", rdeps(//..., @system//:rapidcheck)) except attr(tags, "manual|gpu", //...)' \
  2>/dev/null)
echo "properties: ${#targets[@]} targets, $cases cases each, seed $seed"
status=0
# Fresh results (never cached), and room for long runs whatever the target's size.
bazel test "${bazel_options[@]}" --nocache_test_results --test_timeout=7200 \
  "--test_env=RC_PARAMS=max_success=$cases seed=$seed" "${targets[@]}" || status=$?
echo "repeat: tools/properties.sh --cases $cases --seed $seed"
exit "$status"
