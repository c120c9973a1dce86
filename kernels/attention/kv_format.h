// The paged KV cache's shapes (GQA and MLA), their limits and validation, and the bytes a shape
// takes in its storage format (the formats themselves are base/kv_format.h's).
#pragma once

#include <cstdint>

#include "base/kv_format.h"
#include "base/status.h"

namespace kvsim {

// GQA/MHA: separate K and V pools, `num_kv_heads` heads of `head_dim`. MLA (DeepSeek, Kimi K2.6,
// GLM 5.2): one latent row per token of kv_lora_rank + qk_rope_dim values; attention reads K as
// the whole row and V as its first kv_lora_rank values.
enum class AttentionKind : uint8_t { kGqa, kMla };

// MLA dimensions shared by DeepSeek V3, Kimi K2.6 and GLM 5.2.
inline constexpr int kMlaLoraRank = 512;
inline constexpr int kMlaRopeDim = 64;
inline constexpr int kMlaHeadDim = kMlaLoraRank + kMlaRopeDim;  // 576
// FlashMLA's FP8 layout (KvScaling::kMlaBlock128): scale blocks over the first kMlaLoraRank
// values. The kernels lay its row out as latent, scales, rope.
inline constexpr int kMlaScaleBlock = kKvScaleBlockValues;
inline constexpr int kMlaScaleBlocks = kMlaLoraRank / kMlaScaleBlock;  // 4
inline constexpr int kMlaBlockRowBytes = static_cast<int>(
    KvRowSizeOf({KvDtype::kFp8E4M3, KvScaling::kMlaBlock128}, {kMlaHeadDim, kMlaRopeDim})
        .row_bytes());
static_assert(kMlaBlockRowBytes == 656, "FlashMLA's FP8 token is 656 bytes");
static_assert(kMlaBlockRowBytes % 16 == 0, "rows are read with 16-byte loads");

// Bounds every shape is checked against.
inline constexpr int kMaxPageSize = 256;
inline constexpr int kMaxKvHeads = 128;
inline constexpr int kMaxGqaGroup = 16;
inline constexpr int kMaxMlaQueryHeads = 128;
// A request's block table covers at most this many tokens (1M): positions and slot offsets stay
// far inside int32, and the decode splits have a bounded number of splits.
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

// Bytes of one (token, kv head) row in a page pool (KvRowSize::row_bytes): bf16 2 * head_dim, FP8
// head_dim, MLA blocks 656. Rows are multiples of 16 bytes for every supported shape.
int64_t KvRowBytes(const KvCacheShape& shape);
// Bytes of the K pool (and of the V pool for GQA): num_pages * page_size * num_kv_heads * row.
int64_t KvPoolBytes(const KvCacheShape& shape);
// Floats of each per-token-head scale pool ([num_pages, page_size, num_kv_heads]); 0 when the
// format has none.
int64_t KvScalePoolFloats(const KvCacheShape& shape);
// Cache bytes one token takes in this layer, all heads, K and V, scales included: what capacity
// planning multiplies by the token count (MLA bf16 1152, MLA FlashMLA FP8 656).
int64_t KvBytesPerToken(const KvCacheShape& shape);

}  // namespace kvsim
