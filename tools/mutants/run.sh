#!/usr/bin/env bash
# tools/mutants/run.sh [--cuda] [--check] [--bundle DIR] [NAME...]: the mutation test (manual; it
# rebuilds per mutant: 7 minutes for the CPU catalogue on two idle cores; docs/testing.md).
#
# Each file tools/mutants/cpu/NAME.mutant (with --cuda: tools/mutants/cuda/) is one named source
# mutation and the tests expected to kill it:
#
#   # What the mutation does, in one line (the table's description).
#   file: path/from/the/repository/root
#   find: one whole line of that file, its indentation included, found there exactly once
#   replace: what the line becomes
#   kill: //a/test:target          (one or more; CPU mutants: tests of the default suite)
#
# (file/find/replace may repeat for a mutation of several lines.) The command copies the working
# tree (tracked and untracked files git does not ignore) to a scratch folder,
# $KVSIM_MUTANTS_DIR/tree (default ~/.cache/kvsim/mutants/tree), never into a checkout; checks
# that every mutant applies and that its targets are in the default suite (CUDA: tagged gpu);
# runs every named target on the unmutated copy, which must pass; then for each mutant applies it,
# builds and runs its targets, restores the file, and prints a row: the mutant, the targets that
# failed ("killed by"), or SURVIVED. Last come the totals and the wall time. Exit status 0 when
# every mutant was killed.
#
#   --cuda        the CUDA-only catalogue: each mutant is built; its targets run only where a GPU
#                 is usable (`bazel test --config=gpu`), otherwise its row says so.
#   --bundle DIR  with --cuda: also copy each mutant's static test binaries (--config=bundle) to
#                 DIR/NAME/, for `tools/gpu_check.sh run` on a GPU machine without Bazel.
#   --check       only check that every mutant applies and names default-suite targets.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
catalogue="$root/tools/mutants/cpu"
cuda=0
check_only=0
bundle=""
names=()
while [ $# -gt 0 ]; do
  case "$1" in
    --cuda) cuda=1; catalogue="$root/tools/mutants/cuda"; shift ;;
    --check) check_only=1; shift ;;
    --bundle) bundle="$2"; shift 2 ;;
    -*) echo "mutants: unknown option $1 (see the comment at the top of this script)" >&2; exit 2 ;;
    *) names+=("$1"); shift ;;
  esac
done
if [ -n "$bundle" ] && [ "$cuda" -eq 0 ]; then
  echo "mutants: --bundle is for the CUDA catalogue (--cuda)" >&2
  exit 2
fi
if [ ${#names[@]} -eq 0 ]; then
  for file in "$catalogue"/*.mutant; do names+=("$(basename "$file" .mutant)"); done
fi

work="${KVSIM_MUTANTS_DIR:-$HOME/.cache/kvsim/mutants}"
tree="$work/tree"
logs="$work/logs"
start_s=$(date +%s)

# --- the catalogue -------------------------------------------------------------------------------

# Fields of one mutant file, one per line, as "key<TAB>value" (the first comment line as "what").
fields() {
  awk '
    /^# / && !seen_what { print "what\t" substr($0, 3); seen_what = 1; next }
    /^#/ || /^$/ { next }
    { key = $0; sub(/:.*/, "", key); value = $0; sub(/^[a-z]+: /, "", value); print key "\t" value }
  ' "$1"
}

field_values() {  # FILE KEY: every value of KEY, one per line
  fields "$1" | awk -F '\t' -v key="$2" '$1 == key { print substr($0, length(key) + 2) }'
}

# Applies (or, with "check", only counts) the edits of mutant file $1 to the tree under $2.
# Prints a reason and returns 1 when a find line is not there exactly once.
edit_tree() {
  local mutant="$1" under="$2" mode="$3"
  perl -e '
    use strict; use warnings;
    my ($mutant, $under, $mode) = @ARGV;
    open(my $in, "<", $mutant) or die "cannot read $mutant\n";
    my ($file, $find, @edits);
    while (my $line = <$in>) {
      chomp $line;
      if ($line =~ /^file: (.*)$/) { $file = $1; }
      elsif ($line =~ /^find: (.*)$/) { $find = $1; }
      elsif ($line =~ /^replace: (.*)$/) { push @edits, [$file, $find, $1]; }
    }
    die "no file/find/replace in $mutant\n" unless @edits;
    for my $edit (@edits) {
      my ($path, $old, $new) = @$edit;
      open(my $fh, "<", "$under/$path") or die "$path: cannot read it\n";
      my @lines = <$fh>;
      close $fh;
      my @at = grep { my $l = $lines[$_]; chomp $l; $l eq $old } 0 .. $#lines;
      die "$path: the find line occurs " . scalar(@at) . " times, not once: $old\n" if @at != 1;
      next if $mode eq "check";
      $lines[$at[0]] = "$new\n";
      open($fh, ">", "$under/$path") or die "$path: cannot write it\n";
      print $fh @lines;
      close $fh;
    }
  ' "$mutant" "$under" "$mode"
}

declare -A what kills files
problems=0
for name in "${names[@]}"; do
  file="$catalogue/$name.mutant"
  if [ ! -f "$file" ]; then
    echo "mutants: no mutant $name ($file)" >&2
    problems=$((problems + 1))
    continue
  fi
  what[$name]="$(field_values "$file" what)"
  kills[$name]="$(field_values "$file" kill | tr '\n' ' ')"
  files[$name]="$(field_values "$file" file | sort -u | tr '\n' ' ')"
  if [ -z "${kills[$name]// /}" ] || [ -z "${files[$name]// /}" ]; then
    echo "mutants: $name names no file or no test to kill it" >&2
    problems=$((problems + 1))
  elif ! reason=$(edit_tree "$file" "$root" check 2>&1); then
    echo "mutants: $name does not apply: $reason" >&2
    problems=$((problems + 1))
  fi
done
[ "$problems" -eq 0 ] || exit 2

"$root/tools/bootstrap.sh" || exit $?
all_targets=$(printf '%s\n' "${kills[@]}" | tr ' ' '\n' | grep . | sort -u)
mapfile -t targets <<< "$all_targets"
target_set="set(${targets[*]})"
if [ "$cuda" -eq 0 ]; then
  wrong=$(cd "$root" && bazel query "attr(tags, 'manual|gpu', $target_set) + (${target_set} - tests(${target_set}))" 2>/dev/null)
  [ -z "$wrong" ] || { echo "mutants: not tests of the default suite: $wrong" >&2; exit 2; }
else
  wrong=$(cd "$root" && bazel query "${target_set} - attr(tags, 'gpu', tests(${target_set}))" 2>/dev/null)
  [ -z "$wrong" ] || { echo "mutants: not tests tagged gpu: $wrong" >&2; exit 2; }
fi
if [ "$check_only" -eq 1 ]; then
  echo "mutants: ${#names[@]} mutants apply; their ${#targets[@]} targets are where they belong"
  exit 0
fi

# --- the scratch copy ----------------------------------------------------------------------------

echo "mutants: copying the working tree to $tree"
rm -rf "$tree" "$logs"
mkdir -p "$tree" "$logs"
(cd "$root" && git ls-files -z --cached --others --exclude-standard |
   tar --null --ignore-failed-read -T - -cf - 2>/dev/null) | tar -C "$tree" -xf - || exit 2
trap '(cd "$tree" && bazel shutdown >/dev/null 2>&1)' EXIT

gpu=0
if [ "$cuda" -eq 1 ] && nvidia-smi >/dev/null 2>&1; then gpu=1; fi
# Mutant builds read the shared disk cache but add nothing to it.
common=(--noremote_upload_local_results --keep_going)
run_targets() {  # LOG TARGETS...: builds and runs (or, for CUDA without a GPU, builds) them
  local log="$1"
  shift
  if [ "$cuda" -eq 1 ] && [ "$gpu" -eq 0 ]; then
    (cd "$tree" && bazel build "${common[@]}" "$@") > "$log" 2>&1
  elif [ "$cuda" -eq 1 ]; then
    (cd "$tree" && bazel test "${common[@]}" --config=gpu --test_output=errors "$@") > "$log" 2>&1
  else
    (cd "$tree" && bazel test "${common[@]}" --test_output=errors "$@") > "$log" 2>&1
  fi
}

# Bazel's summary: "//pkg:name  (cached) PASSED in 0.1s", "//pkg:name  FAILED TO BUILD", ...
summary_status() {  # LOG TARGET
  grep -E "^$2 " "$1" | tail -n 1 | sed -E 's/^[^ ]+ +(\(cached\) )?//; s/ in [0-9.]+s$//'
}

echo "mutants: the unmutated copy, every named target ($(date +%H:%M:%S))"
baseline_s=$(date +%s)
if ! run_targets "$logs/unmutated.log" "${targets[@]}"; then
  echo "mutants: the unmutated copy fails; see $logs/unmutated.log" >&2
  exit 1
fi
echo "mutants: unmutated copy passed in $(( $(date +%s) - baseline_s )) s"

# --- the mutants ---------------------------------------------------------------------------------

rows=()
killed=0
survived=0
broken=0
not_run=0
for name in "${names[@]}"; do
  mutant_s=$(date +%s)
  read -r -a mutated <<< "${files[$name]}"
  read -r -a named <<< "${kills[$name]}"
  mkdir -p "$work/pristine"
  for path in "${mutated[@]}"; do
    mkdir -p "$work/pristine/$(dirname "$path")"
    cp -p "$tree/$path" "$work/pristine/$path"
  done
  edit_tree "$catalogue/$name.mutant" "$tree" apply || exit 2
  run_targets "$logs/$name.log" "${named[@]}"
  for path in "${mutated[@]}"; do cp -p "$work/pristine/$path" "$tree/$path"; done
  failed=()
  unbuilt=0
  for target in "${named[@]}"; do
    status=$(summary_status "$logs/$name.log" "$target")
    case "$status" in
      FAILED*TO*BUILD | "NO STATUS" | "") [ "$cuda" -eq 1 ] && [ "$gpu" -eq 0 ] || unbuilt=1 ;;
      FAILED* | TIMEOUT* | INCOMPLETE* | FLAKY*) failed+=("${target#//}") ;;
    esac
  done
  if [ "$cuda" -eq 1 ] && [ "$gpu" -eq 0 ]; then
    if grep -q "Build completed successfully" "$logs/$name.log"; then
      verdict="built; not run (no GPU here)"
      not_run=$((not_run + 1))
    else
      verdict="DOES NOT BUILD (see $logs/$name.log)"
      broken=$((broken + 1))
    fi
  elif [ "$unbuilt" -eq 1 ]; then
    verdict="DOES NOT BUILD (see $logs/$name.log)"
    broken=$((broken + 1))
  elif [ ${#failed[@]} -gt 0 ]; then
    verdict="${failed[*]}"
    verdict="${verdict// /, }"
    killed=$((killed + 1))
  else
    verdict="SURVIVED"
    survived=$((survived + 1))
  fi
  if [ -n "$bundle" ]; then
    mkdir -p "$bundle/$name"
    edit_tree "$catalogue/$name.mutant" "$tree" apply || exit 2
    if (cd "$tree" && bazel build --config=bundle "${common[@]}" "${named[@]}") >> "$logs/$name.log" 2>&1; then
      for target in "${named[@]}"; do
        label="${target#//}"
        cp "$tree/bazel-bin/${label/://}" "$bundle/$name/"
      done
    else
      verdict="$verdict; bundle not built"
    fi
    for path in "${mutated[@]}"; do cp -p "$work/pristine/$path" "$tree/$path"; done
  fi
  seconds=$(( $(date +%s) - mutant_s ))
  row="| \`$name\` | ${what[$name]} | $verdict | $seconds |"
  rows+=("$row")
  echo "$row"
done

total_s=$(( $(date +%s) - start_s ))
echo
echo "mutants: $(date +%Y-%m-%d), tools/mutants/run.sh$([ "$cuda" -eq 1 ] && echo " --cuda")"
echo
echo "| mutant | what it changes | killed by | seconds |"
echo "|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
echo "${#names[@]} mutants: $killed killed, $survived survived, $broken did not build, $not_run not run; $total_s s in all ($(( total_s / 60 )) min)"
[ "$survived" -eq 0 ] && [ "$broken" -eq 0 ]
