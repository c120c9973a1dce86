"""cuda_library: compiles .cu files with the CUDA toolkit's nvcc for Hopper (sm_90a + compute_90 PTX).

There is no rules_cuda offline, so a small rule runs nvcc once per source file with the include
paths and defines of its cc deps, and a cc_library links the objects (alwayslink, so kernels that
register themselves are kept) together with the static CUDA runtime. Each compilation also keeps
ptxas's resource report (registers, spills, stack frame, shared memory per kernel) in a .ptxas file
beside its object, for the static kernel report (tools/kernel_report/); `NAME_cuda_objs` names
the objects and `NAME_ptxas` the reports.
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
    # ptxas's per-kernel resource report, kept in the .ptxas file beside each object.
    "-Xptxas=-v",
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
    reports = []
    for src in ctx.files.srcs:
        stem = src.basename[:-len(".cu")]
        obj = ctx.actions.declare_file("_cuda_objs/%s/%s.o" % (ctx.label.name, stem))
        report = ctx.actions.declare_file("_cuda_objs/%s/%s.ptxas" % (ctx.label.name, stem))
        args = ctx.actions.args()
        args.add(NVCC)
        args.add(report.path)
        args.add_all(NVCC_FLAGS + NVCC_ARCH_FLAGS + ctx.attr.copts + include_flags + define_flags)
        args.add_all(["-c", src.path, "-o", obj.path])

        # nvcc writes ptxas's report on stderr: it goes to the report file, and with everything
        # else nvcc says back to the build's log when the compilation fails. Its intermediate files
        # are named after its process id (tmpxft_<pid>_...) in TMPDIR; in the sandbox's process
        # namespace every action's nvcc has the same small id, so two actions running at once
        # overwrote each other's files ("cannot open source file .../tmpxft_00000003_..."). Each
        # action gets a directory of its own.
        ctx.actions.run_shell(
            command = 'nvcc="$1"; report="$2"; shift 2; ' +
                      'TMPDIR="$(mktemp -d)"; export TMPDIR; trap \'rm -rf "$TMPDIR"\' EXIT; ' +
                      'if ! "$nvcc" "$@" 2> "$report"; then cat "$report" >&2; exit 1; fi',
            arguments = [args],
            inputs = depset([src], transitive = [inputs]),
            outputs = [obj, report],
            mnemonic = "NvccCompile",
            progress_message = "nvcc %s" % src.short_path,
            use_default_shell_env = True,
        )
        objects.append(obj)
        reports.append(report)
    return [
        # As runfiles too, so that a test taking the objects as data (the kernel report) gets them.
        DefaultInfo(files = depset(objects), runfiles = ctx.runfiles(files = objects)),
        OutputGroupInfo(ptxas_reports = depset(reports)),
    ]

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
    """A cc_library whose .cu sources are compiled by nvcc; link it like any cc_library.

    Also defines `name + "_cuda_objs"` (the objects) and `name + "_ptxas"` (ptxas's reports), which
    the static kernel report (//tools/kernel_report) reads.
    """
    all_deps = deps + ["@cuda//:cudart_static"]
    _cuda_objects(
        name = name + "_cuda_objs",
        srcs = srcs,
        hdrs = hdrs,
        deps = all_deps,
        copts = copts,
        visibility = ["//tools/kernel_report:__pkg__"],
    )
    native.filegroup(
        name = name + "_ptxas",
        srcs = [":" + name + "_cuda_objs"],
        output_group = "ptxas_reports",
        visibility = ["//tools/kernel_report:__pkg__"],
    )
    native.cc_library(
        name = name,
        srcs = [":" + name + "_cuda_objs"],
        hdrs = hdrs,
        deps = all_deps,
        alwayslink = True,
        **kwargs
    )
