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

struct KernelSpec {
  AttentionKind attention = AttentionKind::kGqa;
  int kv_heads = 2;   // GQA; MLA has one latent head
  int head_dim = 64;  // GQA: 64, 128 or 256; MLA: 576 (512 latent + 64 rope)
  int q_heads = 8;    // GQA: kv_heads x a group of 1..16; MLA: 1..128
  int layers = 1;     // each with its own cache; 1..4
  KvFormat kv_format = {KvDtype::kFp8E4M3, KvScaling::kPerTensor};
  int gemm_n = 128;     // output features of the INT4 projection: a multiple of 128
  int group_size = 32;  // INT4 group size along k: 32, 64 or 128
  int check_every = 1;  // the FP64 reference checks every this many steps' outputs
  // Which implementation of decode attention and of the INT4 GEMM runs (append_kv has one): the
  // simple path or the fast one (tensor cores; on the CPU their twins). Each output is checked
  // against the bound of the path that ran.
  KernelPath path = KernelPath::kSimple;
};

// The V width: GQA head_dim, MLA the latent (512).
int KernelValueDim(const KernelSpec& spec);

// Checks the spec against what the kernels support; errors name the field and what is allowed.
Status ValidateKernelSpec(const KernelSpec& spec);

// The cache shape of one layer for a pool of `num_pages` pages of `page_size` tokens.
KvCacheShape KernelCacheShape(const KernelSpec& spec, int num_pages, int page_size);

}  // namespace kvsim::sim
