// Host-array wrappers of the GEMM entry points.
#include "kernels/gemm/host_gemm.h"

#include <string>
#include <utility>

namespace kvsim {
namespace {

// Uploads x, bias and the weights, poisons the output, runs `gemm(backend, args)` and downloads
// the output. Args is Int4GemmArgs or Fp8GemmArgs; `upload_weights` makes the matching weights.
template <typename Args, typename Packed, typename UploadWeights, typename Gemm>
Result<std::vector<uint16_t>> RunOnHost(Backend& backend, const std::vector<uint16_t>& x, int m,
                                        const Packed& packed, const std::vector<uint16_t>& bias,
                                        KernelPath path, const UploadWeights& upload_weights,
                                        const Gemm& gemm) {
  if (m < 1 || x.size() != static_cast<size_t>(m) * packed.k) {
    return InvalidArgumentError("x has " + std::to_string(x.size()) +
                                " elements; expected m x k = " + std::to_string(m) + " x " +
                                std::to_string(packed.k));
  }
  if (!bias.empty() && bias.size() != static_cast<size_t>(packed.n)) {
    return InvalidArgumentError("bias has " + std::to_string(bias.size()) +
                                " elements; expected n = " + std::to_string(packed.n));
  }
  KVSIM_ASSIGN_OR_RETURN(const DeviceBuffer x_buffer, Upload(backend, x));
  KVSIM_ASSIGN_OR_RETURN(const DeviceBuffer bias_buffer, Upload(backend, bias));
  KVSIM_ASSIGN_OR_RETURN(DeviceBuffer output,
                         backend.Allocate(static_cast<size_t>(m) * packed.n * sizeof(uint16_t)));
  KVSIM_RETURN_IF_ERROR(backend.Fill(output, 0xFF));
  KVSIM_ASSIGN_OR_RETURN(const auto weights, upload_weights(backend, packed));
  Args args;
  args.m = m;
  args.activations = &x_buffer;
  args.weights = &weights;
  args.bias = bias.empty() ? nullptr : &bias_buffer;
  args.output = &output;
  args.launch.path = path;
  KVSIM_RETURN_IF_ERROR(gemm(backend, args));
  return Download<uint16_t>(backend, output);
}

}  // namespace

Result<std::vector<uint16_t>> RunInt4GemmOnHost(Backend& backend, const std::vector<uint16_t>& x,
                                                int m, const Int4PackedWeights& weights,
                                                const std::vector<uint16_t>& bias,
                                                KernelPath path) {
  return RunOnHost<Int4GemmArgs>(backend, x, m, weights, bias, path, UploadInt4Weights, Int4Gemm);
}

Result<std::vector<uint16_t>> RunFp8GemmOnHost(Backend& backend, const std::vector<uint16_t>& x,
                                               int m, const Fp8PackedWeights& weights,
                                               const std::vector<uint16_t>& bias, KernelPath path) {
  return RunOnHost<Fp8GemmArgs>(backend, x, m, weights, bias, path, UploadFp8Weights, Fp8Gemm);
}

}  // namespace kvsim
