// The fast GQA paged decode path: the query-head group on the M dimension of bf16 tensor-core MMAs,
// K and V pages streamed through a multi-stage cp.async pipeline (docs/kernels.md, "Fast paths:
// GQA decode on tensor cores"), and its CPU twin, which follows the same tiling and order.
#pragma once

#include "base/status.h"
#include "kernels/attention/attention_launch.h"

namespace kvsim {

// The CPU twin of the fast GQA path: the simple path's split plan, warp tiles of 16 tokens with
// their own online softmax, the warps merged in order, then the splits combined; P rounded to
// bf16 where the tensor cores take it. `launch` must be a validated GQA launch.
void DecodeAttentionFastGqaCpu(const DecodeAttentionLaunch& launch);

namespace cuda {

// Enqueues the fast GQA split kernel and the shared combine kernel on `launch.stream`. GQA only
// (head_dim 64, 128 or 256; bf16, e4m3 or e5m2 rows, per-tensor or per-token-head scales; group
// 1 to 16; pools and workspace 16-byte aligned, q 8-byte aligned); InvalidArgument names what is
// supported otherwise, Internal when a CUDA call fails (no usable device included).
Status LaunchDecodeAttentionFastGqa(const DecodeAttentionLaunch& launch);

}  // namespace cuda
}  // namespace kvsim
