// The host steps both CPU decode backends (the simple path's and the fast GQA twin) share: the
// request check before any read, the outputs of a failed request, and the combine of a head's
// split partials in split order (what the CUDA combine kernel computes).
#pragma once

#include <cstdint>

#include "kernels/attention/attention_launch.h"
#include "kernels/attention/kv_row.h"

namespace kvsim {

// One query head's partial over one split: the base-2 maximum score and the sum of weights
// (the weighted sum of V lives beside it).
struct SplitPartial {
  float max_log2;
  float sum;
};

// The request's status, checked before anything is read: its length, then every block-table
// entry it needs.
KvAccessStatus CheckDecodeRequestCpu(const DecodeAttentionLaunch& launch, int request,
                                     int32_t seq_len);

// NaN in every output and the log-sum-exp of (request, head).
void WriteFailedDecodeHead(const DecodeAttentionLaunch& launch, int request, int head);

// Adds the `splits` partials of (request, head) in split order and writes its outputs and
// log-sum-exp: `partials` [splits], `acc` [splits][v_head_dim] (unnormalised weighted V sums),
// `split_weight` [splits] scratch.
void CombineDecodeSplits(const DecodeAttentionLaunch& launch, int request, int head, int splits,
                         const SplitPartial* partials, const float* acc, float* split_weight);

}  // namespace kvsim
