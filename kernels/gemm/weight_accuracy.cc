// The weight accuracy study.
#include "kernels/gemm/weight_accuracy.h"

#include <Eigen/Core>
#include <string>
#include <utility>

#include "base/prng.h"
#include "kernels/formats.h"
#include "kernels/gemm/fp8_quantizer.h"
#include "kernels/gemm/host_gemm.h"
#include "kernels/gemm/int4_quantizer.h"
#include "kernels/gemm/packed_weights.h"

namespace kvsim {
namespace {

using RowMajorMatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowMajorMatrixF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

constexpr int kMaxRows = 4096;
constexpr int kMaxDim = 16384;

const Int4Config kDefaultInt4Configs[] = {
    {32, Int4Scheme::kSymmetric, ScaleType::kBf16},
    {32, Int4Scheme::kAsymmetric, ScaleType::kBf16},
    {64, Int4Scheme::kSymmetric, ScaleType::kBf16},
    {64, Int4Scheme::kAsymmetric, ScaleType::kBf16},
    {128, Int4Scheme::kSymmetric, ScaleType::kBf16},
    {128, Int4Scheme::kAsymmetric, ScaleType::kBf16},
};

template <typename Matrix>
Matrix FromBf16(const std::vector<uint16_t>& bits, int rows, int columns) {
  Matrix matrix(rows, columns);
  for (int64_t i = 0; i < static_cast<int64_t>(bits.size()); ++i) {
    matrix.data()[i] = DecodeBf16(bits[i]);
  }
  return matrix;
}

ErrorStats Compare(const RowMajorMatrixD& reference, const std::vector<uint16_t>& approximation) {
  ErrorStats stats;
  for (int64_t i = 0; i < reference.size(); ++i) {
    stats.Add(reference.data()[i], DecodeBf16(approximation[i]));
  }
  return stats;
}

ErrorStats CompareWeights(const std::vector<float>& original,
                          const std::vector<uint16_t>& dequantized) {
  ErrorStats stats;
  for (size_t i = 0; i < original.size(); ++i) stats.Add(original[i], DecodeBf16(dequantized[i]));
  return stats;
}

Status CheckDim(const char* flag, int value) {
  if (value < 128 || value > kMaxDim || value % 128 != 0) {
    return OutOfRangeError(std::string(flag) + " " + std::to_string(value) +
                           " is not supported; allowed: a multiple of 128 from 128 to 16384");
  }
  return Status::Ok();
}

}  // namespace

Status CheckWeightAccuracyOptions(const WeightAccuracyOptions& options) {
  if (options.m < 1 || options.m > kMaxRows) {
    return OutOfRangeError("--m " + std::to_string(options.m) +
                           " is out of range; allowed: 1 to 4096");
  }
  KVSIM_RETURN_IF_ERROR(CheckDim("--k", options.k));
  KVSIM_RETURN_IF_ERROR(CheckDim("--n", options.n));
  if (options.distributions.empty()) return InvalidArgumentError("no weight distribution given");
  for (const Int4Config& config : options.int4_configs) {
    KVSIM_RETURN_IF_ERROR(CheckInt4GroupSize(config.group_size));
  }
  return Status::Ok();
}

Result<std::vector<WeightAccuracyRow>> MeasureWeightAccuracy(Backend& backend,
                                                             const WeightAccuracyOptions& options) {
  KVSIM_RETURN_IF_ERROR(CheckWeightAccuracyOptions(options));
  std::vector<Int4Config> configs = options.int4_configs;
  if (configs.empty())
    configs.assign(std::begin(kDefaultInt4Configs), std::end(kDefaultInt4Configs));
  const int m = options.m;
  const int k = options.k;
  const int n = options.n;
  std::vector<WeightAccuracyRow> rows;
  Prng prng(options.seed);
  for (WeightDistribution distribution : options.distributions) {
    Prng stream = prng.fork();
    const std::vector<float> weights = SampleWeights(stream, k, n, distribution);
    const std::vector<uint16_t> x =
        SampleBf16(stream, static_cast<size_t>(m) * k, WeightDistribution::kGaussian, 1.0);
    const RowMajorMatrixD reference =
        FromBf16<RowMajorMatrixD>(x, m, k) *
        Eigen::Map<const RowMajorMatrixF>(weights.data(), k, n).cast<double>();
    const std::vector<uint16_t> original_bits = ToBf16Bits(weights);
    auto add_row = [&](std::string format, double bytes, const std::vector<uint16_t>& dequantized,
                       const std::vector<uint16_t>& output) {
      WeightAccuracyRow row;
      row.distribution = WeightDistributionName(distribution);
      row.format = std::move(format);
      row.bytes_per_weight = bytes;
      row.weight_error = CompareWeights(weights, dequantized);
      row.output_error = Compare(reference, output);
      rows.push_back(std::move(row));
    };

    const RowMajorMatrixF product = FromBf16<RowMajorMatrixF>(x, m, k) *
                                    Eigen::Map<const RowMajorMatrixF>(weights.data(), k, n);
    std::vector<uint16_t> bf16_output(static_cast<size_t>(m) * n);
    for (size_t i = 0; i < bf16_output.size(); ++i) bf16_output[i] = EncodeBf16(product.data()[i]);
    add_row("bf16", 2.0, original_bits, bf16_output);

    KVSIM_ASSIGN_OR_RETURN(const Fp8BlockMatrix fp8, QuantizeFp8Blocks(weights, k, n));
    KVSIM_ASSIGN_OR_RETURN(const Fp8PackedWeights fp8_packed, PackFp8(fp8));
    KVSIM_ASSIGN_OR_RETURN(const std::vector<uint16_t> fp8_output,
                           RunFp8GemmOnHost(backend, x, m, fp8_packed, {}, options.path));
    add_row("fp8 block128", Fp8BytesPerWeight(), DequantizeFp8Matrix(fp8), fp8_output);

    for (Int4Config config : configs) {
      config.scale_type = options.int4_scale_type;
      Int4QuantizeOptions quantize;
      quantize.config = config;
      quantize.clip_search = options.clip_search;
      KVSIM_ASSIGN_OR_RETURN(const Int4Matrix int4, QuantizeInt4Matrix(weights, k, n, quantize));
      KVSIM_ASSIGN_OR_RETURN(const Int4PackedWeights int4_packed, PackInt4(int4));
      KVSIM_ASSIGN_OR_RETURN(const std::vector<uint16_t> int4_output,
                             RunInt4GemmOnHost(backend, x, m, int4_packed, {}, options.path));
      add_row("int4 " + Int4ConfigName(config) + (options.clip_search ? " clip" : ""),
              Int4BytesPerWeight(config), DequantizeInt4Matrix(int4), int4_output);
    }
  }
  return rows;
}

}  // namespace kvsim
