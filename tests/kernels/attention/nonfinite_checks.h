// The NaN and infinity policy of decode attention (docs/kernels.md, "Decode attention"), checked
// on one backend: each function runs a small seeded GQA case (2 KV heads of 64, 4 query heads,
// three requests) with and without the special values and returns "" when every output is what
// the policy says, or the first difference. decode_attention_test runs them on the CPU,
// attention_gpu_test on CUDA; `run` is DecodeAttention unless a test calls a kernel path directly.
#pragma once

#include <string>

#include "kernels/attention/decode_attention.h"
#include "kernels/attention/kv_format.h"
#include "kernels/backend.h"
#include "tests/kernels/attention/attention_case.h"

namespace kvsim::testing {

// NaN in one query head, +inf in another, -inf in a third (request 1): those heads' outputs and
// log-sum-exps are NaN; request 1's fourth head and requests 0 and 2 equal a clean run's.
std::string CheckNonFiniteQuery(Backend& backend, KvFormat format,
                                const DecodeRunner& run = DecodeAttention);

// An infinity (`negative`: -inf) stored in a BF16 K row at one dimension, read by two query heads
// whose q has opposite signs there. The head whose score becomes +inf is NaN; the one whose score
// becomes -inf gives the token weight 0: outputs and log-sum-exp equal a run that stops before
// that token. A request whose only token scores -inf is NaN. Other requests equal that run.
std::string CheckInfinityInBf16K(Backend& backend, bool negative,
                                 const DecodeRunner& run = DecodeAttention);

// An infinity stored in a BF16 V row at dimension t: output element t of the KV head's query heads
// is that infinity; every other output and every log-sum-exp equals a clean run's.
std::string CheckInfinityInBf16V(Backend& backend, bool negative,
                                 const DecodeRunner& run = DecodeAttention);

// All of the above on `run`: CheckNonFiniteQuery for every GQA format (FlashMLA's block-scaled
// rows are MLA only) and both infinity checks with either sign; the failures, one a line, or "".
std::string CheckNonFinitePolicy(Backend& backend, const DecodeRunner& run = DecodeAttention);

}  // namespace kvsim::testing
