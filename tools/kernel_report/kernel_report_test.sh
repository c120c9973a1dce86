#!/usr/bin/env bash
# The static kernel report as a test: runs kernel_report on the CUDA objects and ptxas reports
# named in BUILD.bazel, with the gates and the H200's figures; fails when a gate fails. The table
# goes to the test log and to kernel_report.md among the test's outputs.
#   kernel_report_test.sh KERNEL_REPORT CUOBJDUMP GATES GPU_YAML FILES...
set -euo pipefail
report="$1" cuobjdump="$2" gates="$3" gpu="$4"
shift 4
out="${TEST_UNDECLARED_OUTPUTS_DIR:-${TMPDIR:-/tmp}}/kernel_report.md"
exec "$report" --cuobjdump "$cuobjdump" --gates "$gates" --gpu "$gpu" --out "$out" "$@"
