// KernelSpec: the small model whose data plane a kernel-mode run executes through the real
// kernels: the attention shape, the KV-cache format, how many layers, and the INT4 projection
// that follows attention.
#pragma once

#include <cstdint>
#include <string>

#include "base/kv_format.h"
#include "base/status.h"
#include "kernels/attention/kv_format.h"
#include "kernels/launch_options.h"

namespace kvsim::sim {

// What kernel mode's shape is: the small stand-in the fields give, or the deployment's own
// (ModelShapedKernelSpec, kernel_model_shape.h) resolved when a run is prepared.
enum class KernelShape : uint8_t { kSmall, kModel };

struct KernelSpec {
  AttentionKind attention = AttentionKind::kGqa;
  int kv_heads = 2;   // GQA; MLA has one latent head
  int head_dim = 64;  // GQA: 64, 128 or 256; MLA: 576 (512 latent + 64 rope)
  int q_heads = 8;    // GQA: kv_heads x a group of 1..16; MLA: 1..128
  int layers = 1;     // each with its own cache; 1..4
  KvFormat kv_format = {KvDtype::kFp8E4M3, KvScaling::kPerTensor};
  int gemm_n = 128;  // output features of the INT4 projection: a multiple of 128
  // Input features of the INT4 projection: 0 takes the attention output (q_heads x value dim);
  // shape: model sets the model's hidden size, fed by an activation derived from each row.
  int gemm_k = 0;
  int group_size = 32;  // INT4 group size along k: 32, 64 or 128
  int check_every = 1;  // the FP64 reference checks every this many steps' outputs
  // Which implementation of decode attention and of the INT4 GEMM runs (append_kv has one): the
  // simple path or the fast one (tensor cores; on the CPU their twins). Each output is checked
  // against the bound of the path that ran.
  KernelPath path = KernelPath::kSimple;
  KernelShape shape = KernelShape::kSmall;
};

// The INT4 projection's k: gemm_k, or the attention output's width when it is 0.
int KernelGemmK(const KernelSpec& spec);

// The V width: GQA head_dim, MLA the latent (512).
int KernelValueDim(const KernelSpec& spec);

// Checks the spec against what the kernels support; errors name the field and what is allowed.
Status ValidateKernelSpec(const KernelSpec& spec);

// The cache shape of one layer for a pool of `num_pages` pages of `page_size` tokens.
KvCacheShape KernelCacheShape(const KernelSpec& spec, int num_pages, int page_size);

}  // namespace kvsim::sim
