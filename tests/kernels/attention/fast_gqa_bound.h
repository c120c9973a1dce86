// The rounding counts of the fast GQA decode path's order (docs/numerics.md, "The fast paths"),
// for the FP64 reference's bound: the largest over every split length the bound covers, computed
// from the path's tiling and not from the splits a kernel chose.
#pragma once

#include "kernels/attention/decode_splits.h"
#include "tests/kernels/attention/reference_check.h"

namespace kvsim::testing {

// Where the fast path's dot products and weighted sums run.
enum class FastGqaArithmetic {
  kCpuTwin,      // IEEE fp32, any order
  kTensorCores,  // mma.sync: 16 exact products and the accumulator added in one step that may
                 // truncate (reference::kTensorCoreStepRoundings per step)
};

// The counts for a request of seq_len tokens (>= 1) with K rows of head_dim values: the outputs'
// and the log-sum-exp's (the weight sum, on a shorter fp32 chain), under kBf16TensorCore (P
// rounded to bf16 for P V, on both backends).
BoundModels FastGqaWorstCaseBoundModels(int head_dim, int seq_len, FastGqaArithmetic arithmetic);

}  // namespace kvsim::testing
