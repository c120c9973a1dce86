// The paged KV cache's shapes and storage formats (GQA and MLA; BF16 and FP8 with per-tensor,
// per-token-per-head or FlashMLA-style block scales), and the bytes each takes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace kvsim {

// GQA/MHA: separate K and V pools, `num_kv_heads` heads of `head_dim`. MLA (DeepSeek, Kimi K2.6,
// GLM 5.2): one latent row per token of kv_lora_rank + qk_rope_dim values; attention reads K as
// the whole row and V as its first kv_lora_rank values.
enum class AttentionKind : uint8_t { kGqa, kMla };

// The type of the stored values.
enum class KvDtype : uint8_t { kBf16, kFp8E4M3, kFp8E5M2 };

// How FP8 values are scaled: stored code = Encode(x / scale), read value = Decode(code) * scale.
enum class KvScaling : uint8_t {
  // BF16 only: values stored as they are.
  kNone,
  // One fp32 scale for K and one for V, per layer, set by the caller (calibrated, or 1.0).
  kPerTensor,
  // A dynamic fp32 scale per (token, kv head), absmax / largest finite, computed when the token is
  // appended and stored in a scale pool beside the pages.
  kPerTokenHead,
  // MLA, e4m3 only: FlashMLA's 656-byte token. 512 e4m3 values, 4 fp32 power-of-two scales (one
  // per 128 values), then the 64 rope values in bf16, unquantised.
  kMlaBlock128,
};

// A storage format: the stored dtype and how it is scaled (AllKvFormats lists the valid pairs).
struct KvFormat {
  KvDtype dtype = KvDtype::kBf16;
  KvScaling scaling = KvScaling::kNone;
};

inline bool operator==(KvFormat a, KvFormat b) {
  return a.dtype == b.dtype && a.scaling == b.scaling;
}
inline bool operator!=(KvFormat a, KvFormat b) { return !(a == b); }

// MLA dimensions shared by DeepSeek V3, Kimi K2.6 and GLM 5.2.
inline constexpr int kMlaLoraRank = 512;
inline constexpr int kMlaRopeDim = 64;
inline constexpr int kMlaHeadDim = kMlaLoraRank + kMlaRopeDim;  // 576
// FlashMLA's FP8 layout: 128-value scale blocks over the first kMlaLoraRank values.
inline constexpr int kMlaScaleBlock = 128;
inline constexpr int kMlaScaleBlocks = kMlaLoraRank / kMlaScaleBlock;  // 4
inline constexpr int kMlaBlockRowBytes =
    kMlaLoraRank + 4 * kMlaScaleBlocks + 2 * kMlaRopeDim;  // 656
static_assert(kMlaBlockRowBytes == 656, "FlashMLA's FP8 token is 656 bytes");
static_assert(kMlaBlockRowBytes % 16 == 0, "rows are read with 16-byte loads");

// Bounds every shape is checked against.
inline constexpr int kMaxPageSize = 256;
inline constexpr int kMaxKvHeads = 128;
inline constexpr int kMaxGqaGroup = 16;
inline constexpr int kMaxMlaQueryHeads = 128;
// A request's block table covers at most this many tokens (1M): positions and slot offsets stay
// far inside int32, and the decode split plan has a bounded number of splits.
inline constexpr int64_t kMaxContextTokens = int64_t{1} << 20;
// A pool holds at most this many physical pages (int32 page ids, with room to spare).
inline constexpr int kMaxPages = 1 << 24;

// One layer's paged cache.
struct KvCacheShape {
  AttentionKind kind = AttentionKind::kGqa;
  int num_pages = 0;     // physical pages in the pool, 1..kMaxPages
  int page_size = 0;     // tokens per page, 1..kMaxPageSize (any value, not only powers of two)
  int num_kv_heads = 0;  // GQA: 1..kMaxKvHeads; MLA: 1
  int head_dim = 0;      // K (QK) dimension: GQA 64, 128 or 256; MLA 576
  int v_head_dim = 0;    // V dimension: GQA = head_dim; MLA 512 (the latent's first values)
  KvFormat format;
};

// A GQA shape: K and V pools of [num_pages, page_size, num_kv_heads, head_dim].
KvCacheShape GqaCacheShape(int num_pages, int page_size, int num_kv_heads, int head_dim,
                           KvFormat format);
// An MLA shape: one latent pool of [num_pages, page_size, 576].
KvCacheShape MlaCacheShape(int num_pages, int page_size, KvFormat format);

// Ok, or InvalidArgument/OutOfRange naming the field, its value and what is supported.
Status ValidateKvCacheShape(const KvCacheShape& shape);

// Bytes of one (token, kv head) row in a page pool: bf16 2 * head_dim, fp8 head_dim, MLA blocks
// 656. Rows are multiples of 16 bytes for every supported shape.
int64_t KvRowBytes(const KvCacheShape& shape);
// Bytes of the K pool (and of the V pool for GQA): num_pages * page_size * num_kv_heads * row.
int64_t KvPoolBytes(const KvCacheShape& shape);
// Floats of each per-token-head scale pool ([num_pages, page_size, num_kv_heads]); 0 when the
// format has none.
int64_t KvScalePoolFloats(const KvCacheShape& shape);
// Cache bytes one token takes in this layer, all heads, K and V, scales included: what capacity
// planning multiplies by the token count (MLA bf16 1152, MLA FlashMLA FP8 656).
int64_t KvBytesPerToken(const KvCacheShape& shape);

// Every supported format, in a fixed order (bf16 first; e4m3 mla-block128, MLA only, last).
std::vector<KvFormat> AllKvFormats();

// "bf16", "e4m3 per-tensor", "e5m2 per-token-head", "e4m3 mla-block128".
std::string KvFormatName(KvFormat format);
// Parses KvFormatName's output; anything else is InvalidArgument listing the allowed names.
Result<KvFormat> ParseKvFormat(std::string_view text);

}  // namespace kvsim
