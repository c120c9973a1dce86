// Fast MLA decode on tensor cores (in progress).
#include <cuda_runtime.h>

#include "kernels/attention/attention_launch.h"

namespace kvsim::cuda {

Status LaunchDecodeAttentionFastMla(const DecodeAttentionLaunch&) {
  return UnavailableError("fast MLA decode is not built yet");
}

}  // namespace kvsim::cuda
