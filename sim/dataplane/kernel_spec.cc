// Kernel spec validation and shapes.
#include "sim/dataplane/kernel_spec.h"

#include "kernels/attention/decode_attention.h"
#include "kernels/gemm/weight_config.h"

namespace kvsim::sim {

int KernelValueDim(const KernelSpec& spec) {
  return spec.attention == AttentionKind::kMla ? kMlaLoraRank : spec.head_dim;
}

int KernelGemmK(const KernelSpec& spec) {
  return spec.gemm_k > 0 ? spec.gemm_k : spec.q_heads * KernelValueDim(spec);
}

KvCacheShape KernelCacheShape(const KernelSpec& spec, int num_pages, int page_size) {
  return spec.attention == AttentionKind::kMla
             ? MlaCacheShape(num_pages, page_size, spec.kv_format)
             : GqaCacheShape(num_pages, page_size, spec.kv_heads, spec.head_dim, spec.kv_format);
}

Status ValidateKernelSpec(const KernelSpec& spec) {
  if (spec.layers < 1 || spec.layers > 4) {
    return OutOfRangeError("kernel.layers " + std::to_string(spec.layers) +
                           " is out of range; allowed: 1 to 4");
  }
  if (spec.check_every < 1) {
    return OutOfRangeError("kernel.check_every must be at least 1");
  }
  const KvCacheShape shape = KernelCacheShape(spec, 1, 16);
  KVSIM_RETURN_IF_ERROR(ValidateKvCacheShape(shape).WithContext("kernel"));
  KVSIM_RETURN_IF_ERROR(ValidateDecodeHeads(shape, spec.q_heads).WithContext("kernel.q_heads"));
  Int4Config config;
  config.group_size = spec.group_size;
  return CheckInt4Shape("kernel", KernelGemmK(spec), spec.gemm_n, config)
      .WithContext(spec.gemm_k > 0 ? "the INT4 projection (k = gemm_k, n = gemm_n)"
                                   : "the INT4 projection after attention (k = q_heads x value "
                                     "dim, n = gemm_n)");
}

}  // namespace kvsim::sim
