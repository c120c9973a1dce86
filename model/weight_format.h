// WeightFormat: how a weight matrix is stored (BF16, FP8 with square block scales, INT4 with group
// scales) and the bytes a matrix of a given shape takes in it, scales included.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace kvsim::model {

enum class WeightDtype {
  kBf16,  // 2 bytes per element, no scales
  kFp8,   // e4m3, one fp32 scale per block_size x block_size tile (DeepSeek-V3 style)
  kInt4,  // 4 bits per element, one scale per group_size input elements of a row
};

struct WeightFormat {
  WeightDtype dtype = WeightDtype::kBf16;
  int block_size = 128;  // FP8: edge of the square tile sharing one scale
  int group_size = 32;   // INT4: input elements (along a row) sharing one scale
  int scale_bytes = 4;   // bytes of one scale: 2 (bf16) or 4 (fp32)

  bool operator==(const WeightFormat& other) const;
};

// Bytes of a [rows, cols] matrix (rows = output features, cols = input features, as stored in a
// checkpoint) in `format`: data plus scales. INT4 packs two elements per byte; a row whose length
// is odd takes a whole byte for its last element.
uint64_t MatrixBytes(const WeightFormat& format, uint64_t rows, uint64_t cols);

// Of MatrixBytes, the quantisation scales alone (0 for BF16).
uint64_t MatrixScaleBytes(const WeightFormat& format, uint64_t rows, uint64_t cols);

// "bf16", "fp8 (128x128 blocks, fp32 scales)", "int4 (group 32, bf16 scales)".
std::string Describe(const WeightFormat& format);

}  // namespace kvsim::model
