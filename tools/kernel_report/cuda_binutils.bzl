"""cuda_binutils: NVIDIA's cuobjdump and nvdisasm as the repository @cuda_binutils.

tools/bootstrap.sh installs them (pinned PyPI wheels) into .venv-tools/ and links them in
.venv-tools/cuda-bin/. This rule makes two small scripts that run those links, with both on PATH
(cuobjdump calls nvdisasm), so the build never depends on whether bootstrap has run yet: without
the tools the scripts fail with a message that says to run it.
"""

_WRAPPER = """#!/bin/sh
bin="{bin}"
if [ ! -x "$bin/{tool}" ]; then
  echo "{tool} is not installed in $bin: run tools/bootstrap.sh" >&2
  exit 2
fi
PATH="$bin:$PATH" exec "$bin/{tool}" "$@"
"""

def _cuda_binutils_impl(ctx):
    root = str(ctx.path(Label("//:WORKSPACE")).dirname)
    for tool in ["cuobjdump", "nvdisasm"]:
        ctx.file(tool, _WRAPPER.format(bin = root + "/.venv-tools/cuda-bin", tool = tool), executable = True)
    ctx.file("BUILD.bazel", 'exports_files(["cuobjdump", "nvdisasm"])\n')

cuda_binutils = repository_rule(implementation = _cuda_binutils_impl, local = True)
