// Matrix byte counts per weight format.
#include "model/weight_format.h"

#include <fmt/format.h>

#include "base/check.h"

namespace kvsim::model {
namespace {

uint64_t CeilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

const char* ScaleName(int scale_bytes) { return scale_bytes == 2 ? "bf16" : "fp32"; }

}  // namespace

bool WeightFormat::operator==(const WeightFormat& other) const {
  if (dtype != other.dtype) return false;
  switch (dtype) {
    case WeightDtype::kBf16:
      return true;
    case WeightDtype::kFp8:
      return block_size == other.block_size && scale_bytes == other.scale_bytes;
    case WeightDtype::kInt4:
      return group_size == other.group_size && scale_bytes == other.scale_bytes;
  }
  return false;
}

uint64_t MatrixScaleBytes(const WeightFormat& format, uint64_t rows, uint64_t cols) {
  switch (format.dtype) {
    case WeightDtype::kBf16:
      return 0;
    case WeightDtype::kFp8: {
      KVSIM_CHECK_GT(format.block_size, 0);
      const uint64_t block = static_cast<uint64_t>(format.block_size);
      return CeilDiv(rows, block) * CeilDiv(cols, block) *
             static_cast<uint64_t>(format.scale_bytes);
    }
    case WeightDtype::kInt4: {
      KVSIM_CHECK_GT(format.group_size, 0);
      const uint64_t groups = rows * CeilDiv(cols, static_cast<uint64_t>(format.group_size));
      return groups * static_cast<uint64_t>(format.scale_bytes);
    }
  }
  KVSIM_CHECK(false) << "unknown weight dtype";
  return 0;
}

uint64_t MatrixBytes(const WeightFormat& format, uint64_t rows, uint64_t cols) {
  const uint64_t scales = MatrixScaleBytes(format, rows, cols);
  switch (format.dtype) {
    case WeightDtype::kBf16:
      return rows * cols * 2;
    case WeightDtype::kFp8:
      return rows * cols + scales;
    case WeightDtype::kInt4:
      return rows * CeilDiv(cols, 2) + scales;
  }
  KVSIM_CHECK(false) << "unknown weight dtype";
  return 0;
}

std::string Describe(const WeightFormat& format) {
  switch (format.dtype) {
    case WeightDtype::kBf16:
      return "bf16";
    case WeightDtype::kFp8:
      return fmt::format("fp8 e4m3 ({0}x{0} blocks, {1} scales)", format.block_size,
                         ScaleName(format.scale_bytes));
    case WeightDtype::kInt4:
      return fmt::format("int4 (group {}, {} scales)", format.group_size,
                         ScaleName(format.scale_bytes));
  }
  return "?";
}

}  // namespace kvsim::model
