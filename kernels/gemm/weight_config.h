// What a quantised weight matrix is: INT4 group configuration (group size, symmetric or
// asymmetric, scale type) and the FP8 block size, with the checks that name what is supported.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace kvsim {

// The type a per-group INT4 scale is stored in.
enum class ScaleType : uint8_t { kBf16, kFp32 };

// Symmetric: signed codes -8..7, one scale per group, no zero point. Asymmetric (AWQ style):
// unsigned codes 0..15 with a scale and a 4-bit zero point per group; value = (code - zero) *
// scale.
enum class Int4Scheme : uint8_t { kSymmetric, kAsymmetric };

const char* ScaleTypeName(ScaleType type);      // "bf16", "fp32"
const char* Int4SchemeName(Int4Scheme scheme);  // "sym", "asym"

// Parses "bf16" or "fp32"; anything else is InvalidArgument naming the allowed values.
Result<ScaleType> ParseScaleType(const std::string& text);

// Group sizes along K that the packing and the kernels support (Kimi K2.6 ships group size 32).
inline constexpr int kInt4GroupSizes[] = {32, 64, 128};

// FP8 e4m3 weights carry one fp32 scale per block of kFp8BlockK x kFp8BlockN weights, the
// convention of DeepSeek-style FP8 checkpoints (GLM 5.2 ships this way).
inline constexpr int kFp8BlockK = 128;
inline constexpr int kFp8BlockN = 128;

// The largest k and n any weight matrix may have: keeps every element index, and k * n, far
// inside int64 and every per-dimension count inside int32.
inline constexpr int kMaxWeightDim = 65536;

struct Int4Config {
  int group_size = 32;  // consecutive weights along k that share one scale (and zero point)
  Int4Scheme scheme = Int4Scheme::kSymmetric;
  ScaleType scale_type = ScaleType::kBf16;
};

// "g32 sym bf16": how tables and messages name a configuration.
std::string Int4ConfigName(const Int4Config& config);

// OutOfRange naming the supported group sizes when `group_size` is not one of them.
Status CheckInt4GroupSize(int group_size);

// Checks a [k, n] INT4 matrix shape: 1 <= k, n <= kMaxWeightDim, k a multiple of the group size.
// `what` names the caller in messages ("int4_gemm").
Status CheckInt4Shape(const char* what, int k, int n, const Int4Config& config);

// Checks a [k, n] FP8 block matrix shape: k and n positive multiples of 128 up to kMaxWeightDim.
Status CheckFp8Shape(const char* what, int k, int n);

// Checks that `weights` holds k * n values, all finite; InvalidArgument naming the first
// non-finite weight's row and column. `what` names the caller ("int4 quantiser").
Status CheckWeightValues(const char* what, const std::vector<float>& weights, int k, int n);

// Storage bytes per weight, scales and zero points included: 0.5 + scale bytes / group size
// (+ 0.5 / group size for the 4-bit zero points of the asymmetric scheme).
double Int4BytesPerWeight(const Int4Config& config);

// 1 + 4 / (128 * 128): the e4m3 code and its share of the fp32 block scale.
double Fp8BytesPerWeight();

}  // namespace kvsim
