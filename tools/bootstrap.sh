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

# NVIDIA's disassembler tools (cuobjdump, nvdisasm) for the static kernel report
# (tools/kernel_report/): the CUDA toolkit here ships without them and Debian has none, so they
# come as NVIDIA's pinned PyPI wheels into a virtual environment in .venv-tools/ (ignored by git and
# Bazel), and .venv-tools/cuda-bin/ links the two binaries where WORKSPACE's @cuda_binutils finds
# them. Nothing runs when both links already lead to working binaries.
CUDA_BINUTILS_WHEELS=(nvidia-cuda-cuobjdump==13.2.51 nvidia-cuda-nvdisasm==13.2.51)
tools_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$tools_root/.venv-tools"
links="$venv/cuda-bin"
if ! { [ -x "$links/cuobjdump" ] && [ -x "$links/nvdisasm" ] &&
       "$links/cuobjdump" --version >/dev/null 2>&1; }; then
  echo "kvsim: installing cuobjdump and nvdisasm (${CUDA_BINUTILS_WHEELS[*]}) into $venv" >&2
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check "${CUDA_BINUTILS_WHEELS[@]}" >&2
  binaries="$("$venv/bin/python" -c 'import nvidia, os; print(os.path.join(nvidia.__path__[0], "cu13", "bin"))')"
  mkdir -p "$links"
  ln -sfn "$binaries/cuobjdump" "$links/cuobjdump"
  ln -sfn "$binaries/nvdisasm" "$links/nvdisasm"
  "$links/cuobjdump" --version >/dev/null
fi
