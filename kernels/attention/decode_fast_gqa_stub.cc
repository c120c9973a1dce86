// Stand-ins for the fast GQA decode entry points until the kernel is built. DecodeAttention never
// reaches them while kFastGqaBuilt is false (decode_fast_gqa_stub.h).
#include "kernels/attention/decode_fast_gqa_stub.h"
#include "base/check.h"
#include "base/status.h"
#include "kernels/attention/attention_launch.h"

namespace kvsim {

static_assert(!kFastGqaBuilt, "the stub stands in only while the fast GQA kernel is not built");

void DecodeAttentionFastGqaCpu(const DecodeAttentionLaunch&) {
  KVSIM_CHECK(false) << "fast GQA decode is not built yet";
}

namespace cuda {

Status LaunchDecodeAttentionFastGqa(const DecodeAttentionLaunch&) {
  return UnavailableError("fast GQA decode is not built yet");
}

}  // namespace cuda
}  // namespace kvsim
