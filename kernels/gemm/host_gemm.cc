// Host-array wrappers of the GEMM entry points.
#include "kernels/gemm/host_gemm.h"

#include <string>
#include <utility>

namespace kvsim {
namespace {

// The buffers of one call: inputs uploaded, output allocated and poisoned.
struct CallBuffers {
  DeviceBuffer x;
  DeviceBuffer bias;
  DeviceBuffer output;
};

Result<CallBuffers> PrepareCall(Backend& backend, const std::vector<uint16_t>& x, int m, int k,
                                int n, const std::vector<uint16_t>& bias) {
  if (m < 1 || x.size() != static_cast<size_t>(m) * k) {
    return InvalidArgumentError("x has " + std::to_string(x.size()) +
                                " elements; expected m x k = " + std::to_string(m) + " x " +
                                std::to_string(k));
  }
  if (!bias.empty() && bias.size() != static_cast<size_t>(n)) {
    return InvalidArgumentError("bias has " + std::to_string(bias.size()) +
                                " elements; expected n = " + std::to_string(n));
  }
  CallBuffers buffers;
  KVSIM_ASSIGN_OR_RETURN(buffers.x, Upload(backend, x));
  KVSIM_ASSIGN_OR_RETURN(buffers.bias, Upload(backend, bias));
  KVSIM_ASSIGN_OR_RETURN(buffers.output,
                         backend.Allocate(static_cast<size_t>(m) * n * sizeof(uint16_t)));
  KVSIM_RETURN_IF_ERROR(backend.Fill(buffers.output, 0xFF));
  return Result<CallBuffers>(std::move(buffers));
}

}  // namespace

Result<std::vector<uint16_t>> RunInt4GemmOnHost(Backend& backend, const std::vector<uint16_t>& x,
                                                int m, const Int4PackedWeights& weights,
                                                const std::vector<uint16_t>& bias) {
  KVSIM_ASSIGN_OR_RETURN(CallBuffers buffers,
                         PrepareCall(backend, x, m, weights.k, weights.n, bias));
  KVSIM_ASSIGN_OR_RETURN(Int4Weights uploaded, UploadInt4Weights(backend, weights));
  Int4GemmArgs args;
  args.m = m;
  args.activations = &buffers.x;
  args.weights = &uploaded;
  args.bias = bias.empty() ? nullptr : &buffers.bias;
  args.output = &buffers.output;
  KVSIM_RETURN_IF_ERROR(Int4Gemm(backend, args));
  return Download<uint16_t>(backend, buffers.output);
}

Result<std::vector<uint16_t>> RunFp8GemmOnHost(Backend& backend, const std::vector<uint16_t>& x,
                                               int m, const Fp8PackedWeights& weights,
                                               const std::vector<uint16_t>& bias) {
  KVSIM_ASSIGN_OR_RETURN(CallBuffers buffers,
                         PrepareCall(backend, x, m, weights.k, weights.n, bias));
  KVSIM_ASSIGN_OR_RETURN(Fp8Weights uploaded, UploadFp8Weights(backend, weights));
  Fp8GemmArgs args;
  args.m = m;
  args.activations = &buffers.x;
  args.weights = &uploaded;
  args.bias = bias.empty() ? nullptr : &buffers.bias;
  args.output = &buffers.output;
  KVSIM_RETURN_IF_ERROR(Fp8Gemm(backend, args));
  return Download<uint16_t>(backend, buffers.output);
}

}  // namespace kvsim
