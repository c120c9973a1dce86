// End-to-end GEMM cases for tests, properties and the GPU check.
#include "tests/kernels/gemm/gemm_case.h"

#include <utility>

#include "base/prng.h"
#include "base/seed.h"
#include "kernels/gemm/fp8_quantizer.h"
#include "kernels/gemm/host_gemm.h"
#include "kernels/gemm/packed_weights.h"

namespace kvsim::testing {

std::string GemmCase::ToString() const {
  std::string text = "m=" + std::to_string(m) + " k=" + std::to_string(k) +
                     " n=" + std::to_string(n) + " " +
                     (fp8 ? std::string("fp8 block128") : "int4 " + Int4ConfigName(int4.config));
  if (!fp8 && int4.clip_search) text += " clip";
  text += std::string(" weights=") + WeightDistributionName(weights) +
          " activations=" + WeightDistributionName(activations) + (bias ? " bias" : " no-bias") +
          " seed=" + FormatSeed(seed);
  if (skipped_k_step >= 0) text += " k-step " + std::to_string(skipped_k_step) + " skipped";
  if (path != KernelPath::kSimple) text += std::string(" path=") + KernelPathName(path);
  return text;
}

Result<GemmCaseResult> RunGemmCase(Backend& backend, const GemmCase& c, Accumulation accumulation) {
  Prng prng(c.seed);
  Prng weight_stream = prng.fork();
  Prng activation_stream = prng.fork();
  const std::vector<float> weights = SampleWeights(weight_stream, c.k, c.n, c.weights);
  const std::vector<uint16_t> x =
      SampleBf16(activation_stream, static_cast<size_t>(c.m) * c.k, c.activations, 1.0);
  const std::vector<uint16_t> bias =
      c.bias ? SampleBf16(activation_stream, c.n, WeightDistribution::kGaussian, 0.5)
             : std::vector<uint16_t>();
  std::vector<uint16_t> kernel_x = x;
  if (c.skipped_k_step >= 0) {
    for (int i = 0; i < c.m; ++i) {
      for (int j = 16 * c.skipped_k_step; j < 16 * (c.skipped_k_step + 1); ++j) {
        kernel_x.at(static_cast<size_t>(i) * c.k + j) = 0;
      }
    }
  }
  GemmCaseResult result;
  std::vector<uint16_t> dequantized;
  if (c.fp8) {
    KVSIM_ASSIGN_OR_RETURN(Fp8BlockMatrix matrix, QuantizeFp8Blocks(weights, c.k, c.n));
    KVSIM_ASSIGN_OR_RETURN(Fp8PackedWeights packed, PackFp8(matrix));
    KVSIM_ASSIGN_OR_RETURN(result.output,
                           RunFp8GemmOnHost(backend, kernel_x, c.m, packed, bias, c.path));
    dequantized = DequantizeFp8Matrix(matrix);
  } else {
    KVSIM_ASSIGN_OR_RETURN(Int4Matrix matrix, QuantizeInt4Matrix(weights, c.k, c.n, c.int4));
    KVSIM_ASSIGN_OR_RETURN(Int4PackedWeights packed, PackInt4(matrix));
    KVSIM_ASSIGN_OR_RETURN(result.output,
                           RunInt4GemmOnHost(backend, kernel_x, c.m, packed, bias, c.path));
    dequantized = DequantizeInt4Matrix(matrix);
  }
  const GemmReference reference = ReferenceGemm(x, c.m, c.k, dequantized, c.n, bias);
  result.check = CheckGemmOutput(result.output, reference, c.k, accumulation);
  return result;
}

}  // namespace kvsim::testing
