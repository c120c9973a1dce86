// The libFuzzer entry point every harness defines, and replay_main.cc calls.
#pragma once

#include <cstddef>
#include <cstdint>

// Runs one input; returns 0 (libFuzzer's convention). A failed property aborts.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
