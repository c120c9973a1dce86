#!/bin/sh
# Stands in for Bazel's coverage tools, which an offline build cannot download.
echo "bazel coverage is not supported by this offline build" >&2
exit 1
