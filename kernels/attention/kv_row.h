// Host/device code shared by the CPU and CUDA attention kernels: views of the page pools and the
// block table, the per-request/per-token access status, and the bit-level quantisation of one
// (token, head) row. Both backends call these same functions, so append_kv writes identical bits.
#pragma once

#include <math.h>  // fabsf, fmaxf, isfinite on host and device alike

#include <cstdint>

#include "kernels/attention/kv_format.h"
#include "kernels/formats.h"
#include "kernels/host_device.h"

namespace kvsim {

// What a kernel reports for one request (decode) or one new token (append). A token that is not
// kOk writes nothing; a request that is not kOk gets NaN outputs. An id outside the pool is never
// used as an address, and the rest of the batch runs.
enum class KvAccessStatus : int32_t {
  kOk = 0,
  // Decode: the sequence length is below 1 or beyond the block table's row (max pages * page size).
  kSequenceLengthOutOfRange = 1,
  // A block-table entry the request or token needs is outside [0, num_pages).
  kPageOutOfRange = 2,
  // Append: the token names a block-table row outside [0, batch).
  kRequestOutOfRange = 3,
  // Append: the token's position is negative or beyond its block-table row.
  kPositionOutOfRange = 4,
  // Append: a later token of the same call names the same (page, slot); that one is written whole
  // (codes and scale) and this one writes nothing.
  kSuperseded = 5,
};

// One layer's page pools, as raw pointers for the kernels.
struct KvPoolView {
  uint8_t* k_pages = nullptr;  // [num_pages, page_size, num_kv_heads, row_bytes]; MLA: the latent
  uint8_t* v_pages = nullptr;  // GQA: same shape as k_pages; MLA: nullptr (V is K's first 512)
  float* k_token_scales = nullptr;  // kPerTokenHead: [num_pages, page_size, num_kv_heads]
  float* v_token_scales = nullptr;  // kPerTokenHead, GQA: same shape; otherwise nullptr
  int num_pages = 0;
  int page_size = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  int v_head_dim = 0;
  int row_bytes = 0;
  KvFormat format;
  float k_scale = 1.0f;  // kPerTensor: the K scale of this layer
  float v_scale = 1.0f;  // kPerTensor: the V scale (MLA: equal to k_scale)
};

// Block tables as serving engines pass them: int32 physical page ids, one row per request.
struct BlockTableView {
  const int32_t* page_ids = nullptr;  // [batch, row_stride]; the first max_pages_per_request of a
                                      // row are the request's logical pages 0, 1, ...
  int batch = 0;
  int max_pages_per_request = 0;
  int row_stride = 0;
};

// The row of (page, slot, head) within a pool, in rows (multiply by row_bytes for bytes).
KVSIM_HD_INLINE int64_t KvRowIndex(const KvPoolView& pool, int32_t page, int slot, int head) {
  return (static_cast<int64_t>(page) * pool.page_size + slot) * pool.num_kv_heads + head;
}

KVSIM_HD_INLINE bool PageInRange(int32_t page, int num_pages) {
  return page >= 0 && page < num_pages;
}

// The physical page holding logical page `logical_page` of request `request` (both in range).
KVSIM_HD_INLINE int32_t LookupPage(const BlockTableView& table, int request, int logical_page) {
  return table.page_ids[static_cast<int64_t>(request) * table.row_stride + logical_page];
}

// Whether a new token for (request, position) may be written, and if so where: *page and *slot.
KVSIM_HD_INLINE KvAccessStatus LocateAppendSlot(const BlockTableView& table, int num_pages,
                                                int page_size, int32_t request, int32_t position,
                                                int32_t* page, int* slot) {
  if (request < 0 || request >= table.batch) return KvAccessStatus::kRequestOutOfRange;
  if (position < 0 || static_cast<int64_t>(position) >=
                          static_cast<int64_t>(table.max_pages_per_request) * page_size) {
    return KvAccessStatus::kPositionOutOfRange;
  }
  const int32_t physical = LookupPage(table, request, position / page_size);
  if (!PageInRange(physical, num_pages)) return KvAccessStatus::kPageOutOfRange;
  *page = physical;
  *slot = position % page_size;
  return KvAccessStatus::kOk;
}

// Whether a decode request of `seq_len` tokens may read: its length fits its block-table row.
KVSIM_HD_INLINE bool DecodeLengthInRange(const BlockTableView& table, int page_size,
                                         int32_t seq_len) {
  return seq_len >= 1 && static_cast<int64_t>(seq_len) <=
                             static_cast<int64_t>(table.max_pages_per_request) * page_size;
}

// ---------------------------------------------------------------------------------------------
// Quantisation of values into the cache and back.

KVSIM_HD_INLINE float Fp8MaxFinite(KvDtype dtype) {
  return dtype == KvDtype::kFp8E5M2 ? Fp8E5M2::kMaxFinite : Fp8E4M3::kMaxFinite;
}

// Folds |x| into a running absolute maximum, skipping NaN and infinity: a non-finite value must
// not set the scale of its row (it is stored as the codec stores it, see EncodeKvFp8).
KVSIM_HD_INLINE float AbsMaxFinite(float running, float x) {
  const float magnitude = fabsf(x);
  return magnitude <= 3.402823466e38f ? fmaxf(running, magnitude) : running;
}

// The smallest normal float. Scales never go below it, so x / scale never divides by zero.
inline constexpr float kMinKvScale = 1.17549435e-38f;  // 2^-126

// The per-(token, head) scale: absmax / the dtype's largest finite value, so the row's largest
// finite value maps to the largest code; at least kMinKvScale (an all-zero row included).
KVSIM_HD_INLINE float TokenHeadScale(float absmax, KvDtype dtype) {
  return fmaxf(absmax / Fp8MaxFinite(dtype), kMinKvScale);
}

// The smallest power of two >= x, exactly, for a positive normal float x well below the largest.
KVSIM_HD_INLINE float Pow2Ceil(float x) {
  const uint32_t bits = FloatToBits(x);
  if ((bits & 0x007FFFFFu) == 0) return x;
  return BitsToFloat(((bits >> 23) + 1u) << 23);
}

// FlashMLA's amax floor before rounding a block scale up to a power of two (its tests/quant.py
// clamps amax / 448 at 1e-4, which it calls FP8_AMAX_MARGIN), so the smallest block scale is 2^-13.
inline constexpr float kMlaMinScaleInput = 1e-4f;

// A FlashMLA block scale: the smallest power of two >= max(absmax / 448, 1e-4). A power of two,
// so Decode(code) * scale is exact. FlashMLA's reference takes ceil(log2(.)) in floating point;
// this is the same rule computed exactly on the bits.
KVSIM_HD_INLINE float MlaBlockScale(float absmax) {
  return Pow2Ceil(fmaxf(absmax / Fp8E4M3::kMaxFinite, kMlaMinScaleInput));
}

// The FP8 code of x / scale, rounding to nearest even and saturating (an outlier must not become
// NaN and poison attention); NaN stays NaN.
KVSIM_HD_INLINE uint8_t EncodeKvFp8(float x, float scale, KvDtype dtype) {
  const float scaled = x / scale;
  return dtype == KvDtype::kFp8E5M2 ? EncodeFp8<Fp8E5M2>(scaled, Fp8Overflow::kSaturate)
                                    : EncodeFp8<Fp8E4M3>(scaled, Fp8Overflow::kSaturate);
}

// The largest finite value plus half its last step: 464 for e4m3, 61440 for e5m2. Magnitudes of
// x / scale above it clamp; up to it, storing rounds to a finite value within half a step.
KVSIM_HD_INLINE float Fp8SaturationThreshold(KvDtype dtype) {
  return dtype == KvDtype::kFp8E5M2 ? 61440.0f : 464.0f;
}

// Whether storing x with `scale` clamps it (saturates) rather than rounding it. At the threshold
// itself the tie goes to the even neighbour: 448 for e4m3 (its odd neighbour is NaN), but 2^16,
// infinity, for e5m2 (57344 is odd), so an e5m2 tie clamps, to the value rounding down would give.
KVSIM_HD_INLINE bool Fp8Saturates(float x, float scale, KvDtype dtype) {
  const float magnitude = fabsf(x / scale);
  return dtype == KvDtype::kFp8E5M2 ? magnitude >= Fp8SaturationThreshold(dtype)
                                    : magnitude > Fp8SaturationThreshold(dtype);
}

// The value of an FP8 code, unscaled (exact).
KVSIM_HD_INLINE float DecodeKvFp8(uint8_t code, KvDtype dtype) {
  return dtype == KvDtype::kFp8E5M2 ? DecodeFp8<Fp8E5M2>(code) : DecodeFp8<Fp8E4M3>(code);
}

}  // namespace kvsim
