// The FP64 reference's rounding counts for a decode kernel path (docs/numerics.md, "The fast
// paths"): what a check of the simple or the fast path's outputs bounds them with, computed from
// the path's tiling and arithmetic and not from the splits a kernel chose. Shared by the kernel
// tests and the simulator's kernel-mode data plane, so that both hold a path to the same bound.
#pragma once

#include "base/kv_format.h"
#include "kernels/attention/attention_launch.h"
#include "kernels/attention/decode_splits.h"
#include "kernels/attention/kv_format.h"
#include "kernels/attention/reference/attention_reference.h"
#include "kernels/launch_options.h"

namespace kvsim::reference {

// The counts for an output and for the log-sum-exp (which sums the weights on a shorter chain),
// and the arithmetic ReferenceDecode is to assume.
struct BoundModels {
  DecodeRoundingModel out;
  DecodeRoundingModel lse;
  DecodeArithmetic arithmetic = DecodeArithmetic::kFp32;
};

// Where the fast GQA path's dot products and weighted sums run.
enum class FastGqaArithmetic {
  kCpuTwin,      // IEEE fp32, any order
  kTensorCores,  // mma.sync: 16 exact products and the accumulator added in one step that may
                 // truncate (kTensorCoreStepRoundings per step)
};

// The fast GQA path's counts for a request of seq_len tokens (>= 1) with K rows of head_dim
// values, the largest over every split length the bound covers, under kBf16TensorCore (P rounded
// to bf16 for P V, on both backends).
BoundModels FastGqaWorstCaseBoundModels(int head_dim, int seq_len, FastGqaArithmetic arithmetic);

// The arithmetic a decode call runs: fp32 on the simple path; on the fast one bf16 tensor cores,
// or FP8 ones where the fast MLA path picks them for `format` and `math` (ResolveFastMlaMath).
DecodeArithmetic PathArithmetic(AttentionKind kind, KvFormat format, FastMlaMath math,
                                KernelPath path);

// The worst-case counts of `path` for a request of seq_len tokens with K rows of head_dim
// values: the simple path's over every split length the bound covers (fp32), the fast GQA path's
// above (tensor cores where `tensor_cores`, else its CPU twin's fp32), the fast MLA path's under
// its arithmetic.
BoundModels WorstCasePathBound(AttentionKind kind, KvFormat format, FastMlaMath math,
                               KernelPath path, int head_dim, int seq_len, bool tensor_cores);

}  // namespace kvsim::reference
