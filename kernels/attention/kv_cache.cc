// Validation of cache buffers and block tables, raw views, and cache storage.
#include "kernels/attention/kv_cache.h"

#include <cmath>
#include <string>
#include <utility>

namespace kvsim {
namespace {

Status ValidateScale(float scale, const char* what) {
  if (!std::isfinite(scale) || !(scale > 0.0f)) {
    return InvalidArgumentError(std::string(what) + " " + std::to_string(scale) +
                                " is not allowed; a per-tensor scale must be finite and positive");
  }
  return Status::Ok();
}

Status ValidateAbsent(const DeviceBuffer* buffer, const char* what, const char* why) {
  if (buffer != nullptr) {
    return InvalidArgumentError(std::string(what) + " must be null: " + why);
  }
  return Status::Ok();
}

}  // namespace

Status ValidateArgBuffer(const Backend& backend, const DeviceBuffer* buffer, int64_t bytes,
                         const char* what) {
  if (buffer == nullptr) return InvalidArgumentError(std::string(what) + " is missing");
  if (bytes < 0 || static_cast<uint64_t>(bytes) > buffer->bytes()) {
    return OutOfRangeError(std::string(what) + " holds " + std::to_string(buffer->bytes()) +
                           " bytes; its shape needs " + std::to_string(bytes));
  }
  return CheckBufferRange(backend, *buffer, 0, static_cast<size_t>(bytes));
}

Status ValidateKvCache(const Backend& backend, const KvCache& cache) {
  const KvCacheShape& shape = cache.shape;
  KVSIM_RETURN_IF_ERROR(ValidateKvCacheShape(shape));
  const bool gqa = shape.kind == AttentionKind::kGqa;
  KVSIM_RETURN_IF_ERROR(ValidateArgBuffer(backend, cache.k_pages, KvPoolBytes(shape), "k_pages"));
  if (gqa) {
    KVSIM_RETURN_IF_ERROR(ValidateArgBuffer(backend, cache.v_pages, KvPoolBytes(shape), "v_pages"));
  } else {
    KVSIM_RETURN_IF_ERROR(
        ValidateAbsent(cache.v_pages, "v_pages", "an MLA cache keeps K and V in one latent pool"));
  }
  if (shape.format.scaling == KvScaling::kPerTokenHead) {
    const int64_t scale_bytes = KvScalePoolFloats(shape) * int64_t{sizeof(float)};
    KVSIM_RETURN_IF_ERROR(
        ValidateArgBuffer(backend, cache.k_token_scales, scale_bytes, "k_token_scales"));
    if (gqa) {
      KVSIM_RETURN_IF_ERROR(
          ValidateArgBuffer(backend, cache.v_token_scales, scale_bytes, "v_token_scales"));
    } else {
      KVSIM_RETURN_IF_ERROR(ValidateAbsent(cache.v_token_scales, "v_token_scales",
                                           "an MLA cache has one scale per token"));
    }
  } else {
    KVSIM_RETURN_IF_ERROR(ValidateAbsent(cache.k_token_scales, "k_token_scales",
                                         "only per-token-head formats have scale pools"));
    KVSIM_RETURN_IF_ERROR(ValidateAbsent(cache.v_token_scales, "v_token_scales",
                                         "only per-token-head formats have scale pools"));
  }
  if (shape.format.scaling == KvScaling::kPerTensor) {
    KVSIM_RETURN_IF_ERROR(ValidateScale(cache.k_scale, "k_scale"));
    KVSIM_RETURN_IF_ERROR(ValidateScale(cache.v_scale, "v_scale"));
    // One latent tensor has one scale: a V descale that differs from K's reads V wrong (the
    // inconsistent MLA descales of SGLang issue 34765).
    if (!gqa && cache.v_scale != cache.k_scale) {
      return InvalidArgumentError("MLA stores K and V as one latent: v_scale " +
                                  std::to_string(cache.v_scale) + " must equal k_scale " +
                                  std::to_string(cache.k_scale));
    }
  }
  return Status::Ok();
}

Status ValidateBlockTableShape(const BlockTable& table, int page_size) {
  if (table.batch < 1 || table.batch > kMaxBatch) {
    return OutOfRangeError("batch " + std::to_string(table.batch) +
                           " is out of range; allowed: 1 to " + std::to_string(kMaxBatch));
  }
  if (table.max_pages_per_request < 1 || table.max_pages_per_request > table.row_stride) {
    return OutOfRangeError("max_pages_per_request " + std::to_string(table.max_pages_per_request) +
                           " is out of range; allowed: 1 to the row stride " +
                           std::to_string(table.row_stride));
  }
  if (int64_t{table.max_pages_per_request} * page_size > kMaxContextTokens) {
    return OutOfRangeError("a block-table row of " + std::to_string(table.max_pages_per_request) +
                           " pages of " + std::to_string(page_size) + " tokens exceeds " +
                           std::to_string(kMaxContextTokens) + " tokens per request");
  }
  if (int64_t{table.row_stride} * table.batch > (int64_t{1} << 31) - 1) {
    return OutOfRangeError("a block table of " + std::to_string(table.batch) + " rows of stride " +
                           std::to_string(table.row_stride) + " exceeds 2^31 - 1 entries");
  }
  return Status::Ok();
}

Status ValidateBlockTable(const Backend& backend, const BlockTable& table, int page_size) {
  KVSIM_RETURN_IF_ERROR(ValidateBlockTableShape(table, page_size));
  const int64_t bytes = int64_t{table.batch} * table.row_stride * int64_t{sizeof(int32_t)};
  return ValidateArgBuffer(backend, table.page_ids, bytes, "block table");
}

KvPoolView MakeKvPoolView(const KvCache& cache) {
  KvPoolView view;
  const KvCacheShape& shape = cache.shape;
  view.k_pages = cache.k_pages->as<uint8_t>();
  view.v_pages = cache.v_pages != nullptr ? cache.v_pages->as<uint8_t>() : nullptr;
  view.k_token_scales =
      cache.k_token_scales != nullptr ? cache.k_token_scales->as<float>() : nullptr;
  view.v_token_scales =
      cache.v_token_scales != nullptr ? cache.v_token_scales->as<float>() : nullptr;
  view.num_pages = shape.num_pages;
  view.page_size = shape.page_size;
  view.num_kv_heads = shape.num_kv_heads;
  view.head_dim = shape.head_dim;
  view.v_head_dim = shape.v_head_dim;
  view.row_bytes = static_cast<int>(KvRowBytes(shape));
  view.format = shape.format;
  view.k_scale = cache.k_scale;
  view.v_scale = cache.v_scale;
  return view;
}

BlockTableView MakeBlockTableView(const BlockTable& table) {
  BlockTableView view;
  view.page_ids = table.page_ids->as<int32_t>();
  view.batch = table.batch;
  view.max_pages_per_request = table.max_pages_per_request;
  view.row_stride = table.row_stride;
  return view;
}

Result<KvCacheStorage> KvCacheStorage::Allocate(Backend& backend, const KvCacheShape& shape,
                                                float k_scale, float v_scale) {
  KVSIM_RETURN_IF_ERROR(ValidateKvCacheShape(shape));
  KvCacheStorage storage;
  storage.shape_ = shape;
  storage.k_scale_ = k_scale;
  storage.v_scale_ = v_scale;
  const bool gqa = shape.kind == AttentionKind::kGqa;
  const size_t pool_bytes = static_cast<size_t>(KvPoolBytes(shape));
  const size_t scale_bytes = static_cast<size_t>(KvScalePoolFloats(shape)) * sizeof(float);
  KVSIM_ASSIGN_OR_RETURN(storage.k_pages_, backend.Allocate(pool_bytes));
  if (gqa) {
    KVSIM_ASSIGN_OR_RETURN(storage.v_pages_, backend.Allocate(pool_bytes));
  }
  if (scale_bytes > 0) {
    KVSIM_ASSIGN_OR_RETURN(storage.k_token_scales_, backend.Allocate(scale_bytes));
  }
  if (scale_bytes > 0 && gqa) {
    KVSIM_ASSIGN_OR_RETURN(storage.v_token_scales_, backend.Allocate(scale_bytes));
  }
  return Result<KvCacheStorage>(std::move(storage));
}

KvCache KvCacheStorage::view() {
  const bool gqa = shape_.kind == AttentionKind::kGqa;
  const bool scales = shape_.format.scaling == KvScaling::kPerTokenHead;
  KvCache cache;
  cache.shape = shape_;
  cache.k_pages = &k_pages_;
  cache.v_pages = gqa ? &v_pages_ : nullptr;
  cache.k_token_scales = scales ? &k_token_scales_ : nullptr;
  cache.v_token_scales = scales && gqa ? &v_token_scales_ : nullptr;
  cache.k_scale = k_scale_;
  cache.v_scale = v_scale_;
  return cache;
}

Status KvCacheStorage::Fill(Backend& backend, uint8_t value) {
  for (DeviceBuffer* buffer : {&k_pages_, &v_pages_, &k_token_scales_, &v_token_scales_}) {
    if (buffer->bytes() > 0) KVSIM_RETURN_IF_ERROR(backend.Fill(*buffer, value));
  }
  return Status::Ok();
}

}  // namespace kvsim
