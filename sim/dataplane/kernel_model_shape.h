// Kernel mode at a deployment's own shape (`kernel: {shape: model}`): the attention a GPU of the
// deployment runs (its kind, its query and KV heads after tensor parallelism, its head dims, its
// KV format) and, for the INT4 GEMM, one routed expert's gate and up projection on that GPU
// (k = the hidden size, n = 2 x the expert's intermediate size over tp, the experts' INT4 group
// size), or a dense model's MLP up projection.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "model/deployment.h"
#include "model/model_spec.h"
#include "sim/dataplane/kernel_spec.h"

namespace kvsim::sim {

// `base` with the deployment's shape; its layers, check_every and path are kept. Errors say what
// of the model the kernels cannot run (MLA rows other than 512 + 64, GQA head dims other than 64,
// 128 or 256, more query heads per GPU than the kernels take, a projection not a multiple of 128).
Result<KernelSpec> ModelShapedKernelSpec(const KernelSpec& base, const model::ModelSpec& model,
                                         const model::Deployment& deployment);

// Multiply-adds of one step at `rows` rows attending up to `context` tokens each, kernels and the
// FP64 reference together, averaged over check_every steps: decode attention runs every step; on
// every check_every-th the reference of attention, the INT4 projection and its reference (the
// data plane projects only the steps it checks). The figure the CPU backend refuses a
// model-shaped run above (kMaxCpuStepMultiplyAdds).
double KernelStepMultiplyAdds(const KernelSpec& spec, int64_t rows, int64_t context);
inline constexpr double kMaxCpuStepMultiplyAdds = 4e9;

}  // namespace kvsim::sim
