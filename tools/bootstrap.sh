#!/usr/bin/env bash
# Installs the Debian packages kvsim's build needs, and nothing else. Does nothing at all (no apt
# call) when every package is already installed. Called by ./kvsim and ./test.
set -euo pipefail

# Build: Bazel and the compilers. Libraries: tests, properties, benchmarks, numerics, CLI, configs.
# clang and its runtimes: the libFuzzer build. gnuplot: plots written by `kvsim plan --plot`.
PACKAGES=(
  bazel-bootstrap
  g++
  clang-14
  libclang-rt-14-dev
  libgtest-dev
  libgmock-dev
  librapidcheck-dev
  libbenchmark-dev
  libeigen3-dev
  libyaml-cpp-dev
  libcli11-dev
  nlohmann-json3-dev
  libfmt-dev
  gnuplot-nox
)

missing=()
for package in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null || true)
  [ "$status" = "installed" ] || missing+=("$package")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "kvsim: installing missing packages: ${missing[*]}" >&2
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
      echo "kvsim: these packages are missing and installing them needs root: ${missing[*]}" >&2
      exit 2
    fi
    sudo=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq >&2
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# The CUDA toolkit is not a Debian package here: it must already be installed.
if [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "kvsim: the CUDA toolkit (nvcc at /usr/local/cuda/bin/nvcc) is required to build the" \
       "CUDA kernels, and was not found" >&2
  exit 2
fi
