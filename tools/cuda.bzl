"""cuda_library: compiles .cu files with the CUDA toolkit's nvcc for Hopper (sm_90a + compute_90 PTX).

There is no rules_cuda offline, so a small rule runs nvcc once per source file with the include
paths and defines of its cc deps, and a cc_library links the objects (alwayslink, so kernels that
register themselves are kept) together with the static CUDA runtime.
"""

load("//tools:copts.bzl", "KVSIM_NVCC_HOST_WARNINGS")

NVCC = "/usr/local/cuda/bin/nvcc"

# sm_90a machine code for the H100/H200 (wgmma, setmaxnreg), plus compute_90 PTX so the driver can
# still run the plain sm_90 paths on later GPUs.
NVCC_ARCH_FLAGS = [
    "-gencode=arch=compute_90a,code=sm_90a",
    "-gencode=arch=compute_90,code=compute_90",
]

NVCC_FLAGS = [
    "-std=c++17",
    "-O3",
    "-lineinfo",
    "-ccbin=/usr/bin/g++",
    "-Xcompiler=-fPIC",
    "-Xcompiler=" + ",".join(KVSIM_NVCC_HOST_WARNINGS),
    "-Werror=all-warnings",
    "--expt-relaxed-constexpr",
]

def _cuda_objects_impl(ctx):
    compilation = cc_common.merge_cc_infos(
        cc_infos = [dep[CcInfo] for dep in ctx.attr.deps],
    ).compilation_context
    include_flags = []
    for path in compilation.quote_includes.to_list() + ["."]:
        include_flags += ["-I", path]
    for path in compilation.includes.to_list():
        include_flags += ["-I", path]
    for path in compilation.system_includes.to_list():
        include_flags += ["-isystem", path]
    define_flags = ["-D" + d for d in compilation.defines.to_list()]

    inputs = depset(ctx.files.hdrs, transitive = [compilation.headers])
    objects = []
    for src in ctx.files.srcs:
        stem = src.basename[:-len(".cu")]
        obj = ctx.actions.declare_file("_cuda_objs/%s/%s.o" % (ctx.label.name, stem))
        args = ctx.actions.args()
        args.add_all(NVCC_FLAGS + NVCC_ARCH_FLAGS + ctx.attr.copts + include_flags + define_flags)
        args.add_all(["-c", src.path, "-o", obj.path])
        ctx.actions.run(
            executable = NVCC,
            arguments = [args],
            inputs = depset([src], transitive = [inputs]),
            outputs = [obj],
            mnemonic = "NvccCompile",
            progress_message = "nvcc %s" % src.short_path,
            use_default_shell_env = True,
        )
        objects.append(obj)
    return [DefaultInfo(files = depset(objects))]

_cuda_objects = rule(
    implementation = _cuda_objects_impl,
    attrs = {
        "srcs": attr.label_list(allow_files = [".cu"]),
        "hdrs": attr.label_list(allow_files = [".h", ".cuh"]),
        "deps": attr.label_list(providers = [CcInfo]),
        "copts": attr.string_list(),
    },
)

def cuda_library(name, srcs, hdrs = [], deps = [], copts = [], **kwargs):
    """A cc_library whose .cu sources are compiled by nvcc; link it like any cc_library."""
    all_deps = deps + ["@cuda//:cudart_static"]
    _cuda_objects(
        name = name + "_cuda_objs",
        srcs = srcs,
        hdrs = hdrs,
        deps = all_deps,
        copts = copts,
        visibility = ["//visibility:private"],
    )
    native.cc_library(
        name = name,
        srcs = [":" + name + "_cuda_objs"],
        hdrs = hdrs,
        deps = all_deps,
        alwayslink = True,
        **kwargs
    )
