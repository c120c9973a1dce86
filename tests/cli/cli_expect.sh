# Sourced by the kvsim CLI tests: checks on one run of the binary in $kvsim, counting failures in
# $failures.

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

# expect_no_match PATTERN ARGS...: the output of kvsim ARGS must not match PATTERN.
expect_no_match() {
  local pattern="$1"
  shift
  if "$kvsim" "$@" 2>&1 | grep -qE -- "$pattern"; then
    echo "FAIL: kvsim $* output matches /$pattern/ and must not"; failures=$((failures + 1))
  fi
}
