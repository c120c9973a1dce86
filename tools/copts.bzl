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

def kvsim_cc_test(name, copts = [], deps = [], **kwargs):
    """A GoogleTest target named after its file: `foo_test` builds `foo_test.cc` unless srcs says."""
    srcs = kwargs.pop("srcs", [name + ".cc"])

    # Small (60 s timeout) unless a test says otherwise: the default suite stays fast.
    size = kwargs.pop("size", "small")
    native.cc_test(
        name = name,
        srcs = srcs,
        size = size,
        copts = KVSIM_WARNINGS + copts,
        deps = deps + ["@system//:gtest_main"],
        **kwargs
    )
