// Cache shapes: validation and byte sizes.
#include "kernels/attention/kv_format.h"

#include <string>

namespace kvsim {
namespace {

Status ValidateFormat(const KvCacheShape& shape) {
  const KvFormat format = shape.format;
  if (!IsKvFormat(format)) {
    return InvalidArgumentError("unsupported KV cache format (dtype " +
                                std::to_string(static_cast<int>(format.dtype)) + ", scaling " +
                                std::to_string(static_cast<int>(format.scaling)) +
                                "); supported: " + KvFormatNameList());
  }
  if (format.scaling == KvScaling::kMlaBlock128 && shape.kind != AttentionKind::kMla) {
    return InvalidArgumentError("format '" + KvFormatName(format) +
                                "' is FlashMLA's MLA layout; a GQA cache supports bf16, "
                                "per-tensor and per-token-head formats");
  }
  return Status::Ok();
}

// The values of one (token, head) row: a GQA head, or MLA's latent then its rope part.
KvRowSize RowSize(const KvCacheShape& shape) {
  const int rope_dim = shape.kind == AttentionKind::kMla ? kMlaRopeDim : 0;
  return KvRowSizeOf(shape.format, {shape.head_dim, rope_dim});
}

}  // namespace

KvCacheShape GqaCacheShape(int num_pages, int page_size, int num_kv_heads, int head_dim,
                           KvFormat format) {
  return {AttentionKind::kGqa, num_pages, page_size, num_kv_heads, head_dim, head_dim, format};
}

KvCacheShape MlaCacheShape(int num_pages, int page_size, KvFormat format) {
  return {AttentionKind::kMla, num_pages, page_size, 1, kMlaHeadDim, kMlaLoraRank, format};
}

Status ValidateKvCacheShape(const KvCacheShape& shape) {
  if (shape.num_pages < 1 || shape.num_pages > kMaxPages) {
    return OutOfRangeError("num_pages " + std::to_string(shape.num_pages) +
                           " is out of range; allowed: 1 to " + std::to_string(kMaxPages));
  }
  if (shape.page_size < 1 || shape.page_size > kMaxPageSize) {
    return OutOfRangeError("page_size " + std::to_string(shape.page_size) +
                           " is out of range; allowed: 1 to " + std::to_string(kMaxPageSize));
  }
  if (shape.kind == AttentionKind::kGqa) {
    if (shape.num_kv_heads < 1 || shape.num_kv_heads > kMaxKvHeads) {
      return OutOfRangeError("num_kv_heads " + std::to_string(shape.num_kv_heads) +
                             " is out of range; allowed: 1 to " + std::to_string(kMaxKvHeads));
    }
    if (shape.head_dim != 64 && shape.head_dim != 128 && shape.head_dim != 256) {
      return InvalidArgumentError("unsupported head_dim " + std::to_string(shape.head_dim) +
                                  " for GQA; supported: 64, 128, 256 (MLA: 576)");
    }
    if (shape.v_head_dim != shape.head_dim) {
      return InvalidArgumentError("GQA v_head_dim " + std::to_string(shape.v_head_dim) +
                                  " must equal head_dim " + std::to_string(shape.head_dim));
    }
  } else {
    if (shape.num_kv_heads != 1 || shape.head_dim != kMlaHeadDim ||
        shape.v_head_dim != kMlaLoraRank) {
      return InvalidArgumentError(
          "an MLA cache has 1 latent head of 576 values (kv_lora_rank 512 + rope 64) and V of "
          "512; got num_kv_heads " +
          std::to_string(shape.num_kv_heads) + ", head_dim " + std::to_string(shape.head_dim) +
          ", v_head_dim " + std::to_string(shape.v_head_dim));
    }
  }
  return ValidateFormat(shape);
}

int64_t KvRowBytes(const KvCacheShape& shape) { return RowSize(shape).row_bytes(); }

int64_t KvPoolBytes(const KvCacheShape& shape) {
  return int64_t{shape.num_pages} * shape.page_size * shape.num_kv_heads * KvRowBytes(shape);
}

int64_t KvScalePoolFloats(const KvCacheShape& shape) {
  const int64_t floats_per_row = RowSize(shape).side_scale_bytes / kKvScaleBytes;
  return int64_t{shape.num_pages} * shape.page_size * shape.num_kv_heads * floats_per_row;
}

int64_t KvBytesPerToken(const KvCacheShape& shape) {
  const int64_t pools = shape.kind == AttentionKind::kGqa ? 2 : 1;
  return pools * shape.num_kv_heads * RowSize(shape).total_bytes();
}

}  // namespace kvsim
