// AWQ and GPTQ unpacking into the logical INT4 form.
#include "kernels/gemm/checkpoint_import.h"

#include <cmath>
#include <string>

#include "kernels/formats.h"

namespace kvsim {
namespace {

std::string Shape(int rows, int columns) {
  return "[" + std::to_string(rows) + ", " + std::to_string(columns) + "]";
}

Status CheckSize(const char* what, const char* tensor, size_t size, int rows, int columns) {
  if (size != static_cast<size_t>(rows) * columns) {
    return InvalidArgumentError(std::string(what) + ": " + tensor + " has " + std::to_string(size) +
                                " elements; expected " + Shape(rows, columns));
  }
  return Status::Ok();
}

// Checks the common shape rules and copies scales into a fresh asymmetric matrix.
Result<Int4Matrix> StartMatrix(const char* what, int k, int n, int group_size,
                               const std::vector<float>& scales, ScaleType scale_type) {
  const Int4Config config{group_size, Int4Scheme::kAsymmetric, scale_type};
  KVSIM_RETURN_IF_ERROR(CheckInt4Shape(what, k, n, config));
  if (n % kInt4PerWord != 0) {
    return InvalidArgumentError(std::string(what) + ": n = " + std::to_string(n) +
                                " is not a multiple of 8, the values per packed word");
  }
  KVSIM_RETURN_IF_ERROR(CheckSize(what, "scales", scales.size(), k / group_size, n));
  for (size_t i = 0; i < scales.size(); ++i) {
    const float scale = scales[i];
    const bool representable =
        scale_type == ScaleType::kFp32 || DecodeBf16(EncodeBf16(scale)) == scale;
    if (!std::isfinite(scale) || scale < 0 || !representable) {
      return InvalidArgumentError(std::string(what) + ": scale " + std::to_string(scale) + " at (" +
                                  std::to_string(i / n) + ", " + std::to_string(i % n) +
                                  ") is not a finite non-negative " + ScaleTypeName(scale_type) +
                                  " value; import into fp32 scales to keep fp16 scales exact");
    }
  }
  Int4Matrix matrix;
  matrix.k = k;
  matrix.n = n;
  matrix.config = config;
  matrix.scales = scales;
  matrix.codes.resize(static_cast<size_t>(k) * n);
  matrix.zeros.resize(scales.size());
  return matrix;
}

}  // namespace

Result<Int4Matrix> ImportAwq(const AwqTensors& tensors, ScaleType scale_type) {
  constexpr const char* kWhat = "awq import";
  KVSIM_ASSIGN_OR_RETURN(
      Int4Matrix matrix,
      StartMatrix(kWhat, tensors.k, tensors.n, tensors.group_size, tensors.scales, scale_type));
  const int words_per_row = tensors.n / kInt4PerWord;
  const int groups = matrix.groups();
  KVSIM_RETURN_IF_ERROR(
      CheckSize(kWhat, "qweight", tensors.qweight.size(), tensors.k, words_per_row));
  KVSIM_RETURN_IF_ERROR(CheckSize(kWhat, "qzeros", tensors.qzeros.size(), groups, words_per_row));
  for (int row = 0; row < tensors.k; ++row) {
    for (int column = 0; column < tensors.n; ++column) {
      const uint32_t word =
          tensors.qweight[static_cast<size_t>(row) * words_per_row + column / kInt4PerWord];
      matrix.codes[static_cast<size_t>(row) * tensors.n + column] =
          static_cast<int8_t>(GetUint4(word, kAwqNibbleOfColumn[column % kInt4PerWord]));
    }
  }
  for (int group = 0; group < groups; ++group) {
    for (int column = 0; column < tensors.n; ++column) {
      const uint32_t word =
          tensors.qzeros[static_cast<size_t>(group) * words_per_row + column / kInt4PerWord];
      matrix.zeros[static_cast<size_t>(group) * tensors.n + column] =
          static_cast<uint8_t>(GetUint4(word, kAwqNibbleOfColumn[column % kInt4PerWord]));
    }
  }
  return matrix;
}

Result<Int4Matrix> ImportGptq(const GptqTensors& tensors, ScaleType scale_type) {
  constexpr const char* kWhat = "gptq import";
  KVSIM_ASSIGN_OR_RETURN(
      Int4Matrix matrix,
      StartMatrix(kWhat, tensors.k, tensors.n, tensors.group_size, tensors.scales, scale_type));
  const int groups = matrix.groups();
  const int zero_words_per_row = tensors.n / kInt4PerWord;
  KVSIM_RETURN_IF_ERROR(
      CheckSize(kWhat, "qweight", tensors.qweight.size(), tensors.k / kInt4PerWord, tensors.n));
  KVSIM_RETURN_IF_ERROR(
      CheckSize(kWhat, "qzeros", tensors.qzeros.size(), groups, zero_words_per_row));
  if (!tensors.g_idx.empty()) {
    KVSIM_RETURN_IF_ERROR(CheckSize(kWhat, "g_idx", tensors.g_idx.size(), tensors.k, 1));
    for (int row = 0; row < tensors.k; ++row) {
      if (tensors.g_idx[row] != row / tensors.group_size) {
        return InvalidArgumentError(
            std::string(kWhat) + ": g_idx[" + std::to_string(row) +
            "] = " + std::to_string(tensors.g_idx[row]) +
            " but row / group_size = " + std::to_string(row / tensors.group_size) +
            "; act-order checkpoints (desc_act) are not supported");
      }
    }
  }
  for (int row = 0; row < tensors.k; ++row) {
    for (int column = 0; column < tensors.n; ++column) {
      const uint32_t word =
          tensors.qweight[static_cast<size_t>(row / kInt4PerWord) * tensors.n + column];
      matrix.codes[static_cast<size_t>(row) * tensors.n + column] =
          static_cast<int8_t>(GetUint4(word, row % kInt4PerWord));
    }
  }
  const uint32_t offset = tensors.zeros_stored_minus_one ? 1 : 0;
  for (int group = 0; group < groups; ++group) {
    for (int column = 0; column < tensors.n; ++column) {
      const uint32_t word =
          tensors.qzeros[static_cast<size_t>(group) * zero_words_per_row + column / kInt4PerWord];
      const uint32_t zero = GetUint4(word, column % kInt4PerWord) + offset;
      if (zero > static_cast<uint32_t>(kInt4UnsignedMax)) {
        return InvalidArgumentError(std::string(kWhat) + ": zero point at (" +
                                    std::to_string(group) + ", " + std::to_string(column) +
                                    ") is 16 after adding the v1 format's 1; allowed: 0..15");
      }
      matrix.zeros[static_cast<size_t>(group) * tensors.n + column] = static_cast<uint8_t>(zero);
    }
  }
  return matrix;
}

}  // namespace kvsim
