// Compares decode attention outputs with the FP64 reference, element by element, within the
// bound of docs/numerics.md; and measures whether that bound can tell a dropped token.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/status.h"
#include "kernels/attention/reference/attention_reference.h"
#include "kernels/attention/reference/path_bound.h"
#include "kernels/backend.h"
#include "kernels/launch_options.h"
#include "tests/kernels/attention/attention_case.h"

namespace kvsim::testing {

// A case on the CPU backend, generated, uploaded and appended, with its cache downloaded for the
// reference: where the decode kernels' CPU tests start.
struct CpuCase {
  std::unique_ptr<Backend> backend;
  AttentionCase c;
  DeviceCase device;
  reference::HostKvCache cache;
};
Result<CpuCase> MakeCpuCase(const AttentionCaseParams& params);

// The outcome of comparing one run with the reference.
struct ReferenceCheck {
  int64_t checked = 0;     // output elements compared
  double worst_ratio = 0;  // the largest |error| / bound seen (<= 1 when all pass)
  std::string failure;     // empty when every element, lse and status is within its bound
};

// What the reference's bound assumes of one kernel for one request: the rounding counts of its
// order, for the outputs and for the log-sum-exp (whose path to the weight sum may have fewer
// roundings than the weighted sum of V), and its arithmetic (fp32, or bf16 or FP8 tensor cores
// with the weights rounded to bf16 or e4m3 for P V).
// An output's and the log-sum-exp's counts and the arithmetic (the reference library's).
using BoundModels = reference::BoundModels;

// The models for a request of seq_len tokens with K rows of head_dim values.
using BoundModelsFor = std::function<BoundModels(int head_dim, int seq_len)>;

// The arithmetic the bound assumes for case `c` on a kernel path: fp32 for the simple paths; for
// the fast ones bf16 tensor cores, or FP8 ones where the fast MLA path picks them for the case's
// format and c.params.fast_mla_math.
reference::DecodeArithmetic ArithmeticFor(const AttentionCase& c, KernelPath path);

// The models of DecodeAttention's kernel for case `c` on `path`: WorstCaseRoundingModel under
// ArithmeticFor(c, path) for the simple paths and fast MLA (bf16 or FP8 products); the fast GQA
// path's own tensor-core counts (FastGqaWorstCaseBoundModels), which also cover its CPU twin.
BoundModelsFor PathBoundModels(const AttentionCase& c, KernelPath path);

// Checks every request and head of `outputs` (run on `c` with `out_dtype` on `path`) against the
// reference of the cache `cache` (downloaded after the run), within the bound of `models` (the
// path's splits must be ones the bound covers). Every status must be kOk.
ReferenceCheck CheckDecodeAgainstReference(const AttentionCase& c,
                                           const reference::HostKvCache& cache,
                                           const DecodeOutputs& outputs,
                                           AttentionOutputDtype out_dtype, KernelPath path,
                                           const BoundModelsFor& models);

// As above with PathBoundModels(c, path).
ReferenceCheck CheckDecodeAgainstReference(const AttentionCase& c,
                                           const reference::HostKvCache& cache,
                                           const DecodeOutputs& outputs,
                                           AttentionOutputDtype out_dtype,
                                           KernelPath path = kDefaultKernelPath);

// How far apart the check holds request `r`'s exact outputs with and without its last token
// (seq_len >= 2), under the bound of `models`: the largest, over its heads' outputs and
// log-sum-exps, of |without - with| / (bound with + bound without). Above 1, no output is within
// its bound of both, so a kernel that dropped the token fails the check; at or below 1 the check
// cannot tell.
double DroppedTokenSeparation(const AttentionCase& c, const reference::HostKvCache& cache, int r,
                              AttentionOutputDtype out_dtype, const BoundModelsFor& models);

// As above with PathBoundModels(c, path).
double DroppedTokenSeparation(const AttentionCase& c, const reference::HostKvCache& cache, int r,
                              AttentionOutputDtype out_dtype, KernelPath path = kDefaultKernelPath);

}  // namespace kvsim::testing
