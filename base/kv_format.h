// The KV-cache storage formats, defined once for the kernels that write and read the cache and the
// capacity model that plans it: the stored dtype and scaling, one name per format, and the bytes a
// cached (token, head) row takes in each.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/check.h"
#include "base/status.h"

namespace kvsim {

// The type of the stored values.
enum class KvDtype : uint8_t { kBf16, kFp8E4M3, kFp8E5M2 };

// How FP8 values are scaled: stored code = Encode(x / scale), read value = Decode(code) * scale.
enum class KvScaling : uint8_t {
  // BF16 only: values stored as they are.
  kNone,
  // FP8: one fp32 scale for K and one for V, per layer, set by the caller (calibrated, or 1.0);
  // nothing is stored per token.
  kPerTensor,
  // FP8: a dynamic fp32 scale per (token, kv head), absmax / largest finite, computed when the
  // token is appended and stored in a scale pool beside the pages.
  kPerTokenHead,
  // MLA, e4m3 only: FlashMLA's layout. The latent (the values before the rope part) in e4m3 with
  // one fp32 power-of-two scale per kKvScaleBlockValues values, stored inside the row after the
  // latent, then the rope values in bf16, unquantised: 512 + 4 x 4 + 64 x 2 = 656 bytes for
  // DeepSeek-V3's dimensions.
  kMlaBlock128,
};

// A storage format: the stored dtype and how it is scaled. IsKvFormat says which pairs are valid;
// AllKvFormats lists them.
struct KvFormat {
  KvDtype dtype = KvDtype::kBf16;
  KvScaling scaling = KvScaling::kNone;
};

constexpr bool operator==(KvFormat a, KvFormat b) {
  return a.dtype == b.dtype && a.scaling == b.scaling;
}
constexpr bool operator!=(KvFormat a, KvFormat b) { return !(a == b); }

// kMlaBlock128 scales each run of this many latent values with one scale.
inline constexpr int kKvScaleBlockValues = 128;
// Every stored scale is one fp32.
inline constexpr int kKvScaleBytes = 4;
static_assert(kKvScaleBytes == sizeof(float), "scales are fp32");

// Whether the pair is a format: bf16 is unscaled, FP8 is scaled, and the block layout is e4m3.
constexpr bool IsKvFormat(KvFormat format) {
  switch (format.scaling) {
    case KvScaling::kNone:
      return format.dtype == KvDtype::kBf16;
    case KvScaling::kPerTensor:
    case KvScaling::kPerTokenHead:
      return format.dtype != KvDtype::kBf16;
    case KvScaling::kMlaBlock128:
      return format.dtype == KvDtype::kFp8E4M3;
  }
  return false;
}

// Bytes of one stored value: bf16 2, FP8 1.
constexpr int KvDtypeBytes(KvDtype dtype) {
  switch (dtype) {
    case KvDtype::kBf16:
      return 2;
    case KvDtype::kFp8E4M3:
    case KvDtype::kFp8E5M2:
      return 1;
  }
  return 0;
}

// The dtype of a row's rope values: bf16 under kMlaBlock128 (FlashMLA leaves them unquantised),
// the format's dtype otherwise.
constexpr KvDtype KvRopeDtype(KvFormat format) {
  return format.scaling == KvScaling::kMlaBlock128 ? KvDtype::kBf16 : format.dtype;
}

// The values of one cached (token, head) row. GQA: one K or V head, rope_dim 0. MLA: the latent
// row, kv_lora_rank values then rope_dim rotary values (head_dim = kv_lora_rank + rope_dim).
struct KvRowShape {
  int head_dim = 0;
  int rope_dim = 0;
};

// The bytes one cached (token, head) row takes in a format, by part.
struct KvRowSize {
  int64_t value_bytes = 0;       // the values before the rope part (GQA: all of them)
  int64_t rope_bytes = 0;        // the rope values
  int64_t row_scale_bytes = 0;   // scales stored inside the row (kMlaBlock128)
  int64_t side_scale_bytes = 0;  // the scale stored beside the pages (kPerTokenHead)
  int64_t fp8_bytes = 0;         // of the value and rope bytes, those stored in FP8

  // What the row holds in a page: values, rope and the scales inside it.
  constexpr int64_t row_bytes() const { return value_bytes + rope_bytes + row_scale_bytes; }
  constexpr int64_t scale_bytes() const { return row_scale_bytes + side_scale_bytes; }
  // Everything the row costs, the scale beside the pages included.
  constexpr int64_t total_bytes() const { return row_bytes() + side_scale_bytes; }
};

// The bytes of a row of `shape` in `format`. Requires a valid format, 0 <= rope_dim < head_dim
// and, for kMlaBlock128, a latent of whole kKvScaleBlockValues blocks (checked). constexpr so
// kernels can size rows at compile time.
constexpr KvRowSize KvRowSizeOf(KvFormat format, KvRowShape shape) {
  KVSIM_CHECK(IsKvFormat(format)) << "dtype " << static_cast<int>(format.dtype) << ", scaling "
                                  << static_cast<int>(format.scaling);
  KVSIM_CHECK(shape.rope_dim >= 0 && shape.rope_dim < shape.head_dim)
      << "head_dim " << shape.head_dim << ", rope_dim " << shape.rope_dim;
  const int64_t latent_values = shape.head_dim - shape.rope_dim;
  KvRowSize size;
  size.value_bytes = latent_values * KvDtypeBytes(format.dtype);
  size.rope_bytes = int64_t{shape.rope_dim} * KvDtypeBytes(KvRopeDtype(format));
  switch (format.scaling) {
    case KvScaling::kNone:
    case KvScaling::kPerTensor:
      break;
    case KvScaling::kPerTokenHead:
      size.side_scale_bytes = kKvScaleBytes;
      break;
    case KvScaling::kMlaBlock128:
      KVSIM_CHECK(latent_values % kKvScaleBlockValues == 0)
          << "latent of " << latent_values << " values in blocks of " << kKvScaleBlockValues;
      size.row_scale_bytes = latent_values / kKvScaleBlockValues * kKvScaleBytes;
      break;
  }
  size.fp8_bytes = (format.dtype == KvDtype::kBf16 ? 0 : size.value_bytes) +
                   (KvRopeDtype(format) == KvDtype::kBf16 ? 0 : size.rope_bytes);
  return size;
}

// Every format, in a fixed order: bf16 first, then per-tensor, per-token-head, and the MLA block
// format last.
std::vector<KvFormat> AllKvFormats();

// The format's one name, used in flags, configs, tables and JSON: "bf16", "fp8_e4m3",
// "fp8_e5m2_per_token_head", "fp8_mla_tiles". Requires a valid format (checked).
std::string KvFormatName(KvFormat format);
// Every name, in AllKvFormats' order, joined by ", " (for messages and help texts).
std::string KvFormatNameList();
// Parses KvFormatName's output; anything else is InvalidArgument listing the allowed names.
Result<KvFormat> ParseKvFormat(std::string_view text);

}  // namespace kvsim
