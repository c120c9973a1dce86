// Timing helpers for the GPU benchmarks: the device-to-device copy bandwidth they are measured
// against, and the CUDA-event time of a call repeated on the legacy default stream.
#pragma once

#include <functional>

namespace kvsim::testing {

// Bytes per second of a 2 GiB device-to-device cudaMemcpy, counting the bytes read and the bytes
// written. Exits with status 1 on a CUDA error.
double CopyBandwidthBytesPerSecond();

// Microseconds per call of `call` (enqueueing work on the legacy default stream), averaged over
// `calls` calls after 3 warm-up calls. Exits with status 1 on a CUDA error.
double MicrosecondsPerCall(const std::function<void()>& call, int calls);

}  // namespace kvsim::testing
