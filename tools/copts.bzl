"""Compiler flags for the project's own code, defined once, and the rules that apply them."""

# Warnings are errors in every build of the project's own code (not of third-party headers, which
# come in through -isystem and stay quiet).
KVSIM_WARNINGS = [
    "-Wall",
    "-Wextra",
    "-Werror",
    "-Wshadow",
    "-Wnon-virtual-dtor",
    "-Wcast-qual",
    "-Wformat=2",
    "-Wundef",
    "-Wmissing-declarations",
    "-Wimplicit-fallthrough",
    "-Wvla",
]

# Warnings for the host side of nvcc compilations: fewer, because nvcc pulls the CUDA runtime's
# own headers in as ordinary (not system) headers, and they do not pass -Wundef or -Wshadow.
KVSIM_NVCC_HOST_WARNINGS = [
    "-Wall",
    "-Wextra",
    "-Werror",
]

def kvsim_cc_library(name, copts = [], **kwargs):
    native.cc_library(name = name, copts = KVSIM_WARNINGS + copts, **kwargs)

def kvsim_cc_binary(name, copts = [], **kwargs):
    native.cc_binary(name = name, copts = KVSIM_WARNINGS + copts, **kwargs)

def kvsim_cc_test(name, copts = [], deps = [], own_main = False, **kwargs):
    """A GoogleTest target named after its file: `foo_test` builds `foo_test.cc` unless srcs says.

    `own_main`: the test defines main() itself (and calls RUN_ALL_TESTS), e.g. to take Bazel's
    shard variables for its own work before GoogleTest would shard its test cases by them.
    """
    srcs = kwargs.pop("srcs", [name + ".cc"])

    # Small (60 s timeout) unless a test says otherwise: the default suite stays fast.
    size = kwargs.pop("size", "small")
    native.cc_test(
        name = name,
        srcs = srcs,
        size = size,
        # Linked like the binaries: the CUDA runtime is a static archive, which a test linked
        # against the project's shared libraries would not pull in.
        linkstatic = True,
        copts = KVSIM_WARNINGS + copts,
        deps = deps + ["@system//:gtest" if own_main else "@system//:gtest_main"],
        **kwargs
    )

def kvsim_fuzz_target(name, srcs, corpus, deps = []):
    """A libFuzzer harness `name` and a test `name + "_regression_test"` that replays `corpus`.

    Under --config=fuzz the harness links libFuzzer's main(); otherwise //fuzz:replay_main, so it
    still runs on files. The regression test always uses replay_main.
    """
    native.cc_binary(
        name = name,
        testonly = True,
        srcs = srcs,
        copts = KVSIM_WARNINGS,
        linkopts = select({
            "//fuzz:fuzzing": ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
        deps = deps + select({
            "//fuzz:fuzzing": [],
            "//conditions:default": ["//fuzz:replay_main"],
        }),
    )
    native.cc_test(
        name = name + "_regression_test",
        size = "small",
        linkstatic = True,
        srcs = srcs,
        copts = KVSIM_WARNINGS,
        args = ["$(location %s)" % c for c in corpus],
        data = corpus,
        deps = deps + ["//fuzz:replay_main"],
    )
