// RapidCheck generators of attention cases: GQA and MLA, every cache format, awkward page sizes
// and head counts, ragged batches with lengths from 1 to 32K, pages shared between requests.
#pragma once

#include <rapidcheck.h>

#include <cstdint>
#include <ostream>

#include "kernels/attention/kv_format.h"
#include "tests/kernels/attention/attention_case.h"

namespace kvsim::testing {

// How large generated cases may get.
struct CaseLimits {
  int max_batch = 64;
  int max_seq_len = 32768;
  // Bound on sum(seq_len) * (num_q_heads + stored K and V rows per token) * head_dim (the
  // reference's work and the values drawn) at RapidCheck size 100; smaller sizes get
  // proportionally less, so the average case stays cheap. A 32K-token request fits with one KV
  // head of 64 and one query head; the longest with head dim 128, 256 or MLA are 21,845, 10,922
  // and 7,281 tokens (LongContextCases in attention_case.h names longer ones).
  int64_t work_at_max_size = int64_t{1} << 23;
};

// How RapidCheck prints a counterexample's parameters (found by argument-dependent lookup).
inline void showValue(const AttentionCaseParams& params, std::ostream& out) {
  out << DescribeParams(params);
}

// Any format the kind supports.
rc::Gen<KvFormat> GenKvFormat(AttentionKind kind);

// A whole case description; the data itself comes from its seed (MakeAttentionCase).
rc::Gen<AttentionCaseParams> GenAttentionCaseParams(const CaseLimits& limits);

}  // namespace kvsim::testing
