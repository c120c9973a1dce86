// The CPU twin of the fast MLA decode kernel (in progress).
#include "base/check.h"
#include "kernels/attention/attention_launch.h"

namespace kvsim {

void DecodeAttentionFastMlaCpu(const DecodeAttentionLaunch&) {
  KVSIM_CHECK(false) << "fast MLA decode is not built yet";
}

}  // namespace kvsim
