// Cache shapes: validation, byte sizes and format names.
#include "kernels/attention/kv_format.h"

#include <array>
#include <string>

namespace kvsim {
namespace {

struct NamedFormat {
  const char* name;
  KvFormat format;
};

constexpr std::array<NamedFormat, 6> kNamedFormats = {{
    {"bf16", {KvDtype::kBf16, KvScaling::kNone}},
    {"e4m3 per-tensor", {KvDtype::kFp8E4M3, KvScaling::kPerTensor}},
    {"e5m2 per-tensor", {KvDtype::kFp8E5M2, KvScaling::kPerTensor}},
    {"e4m3 per-token-head", {KvDtype::kFp8E4M3, KvScaling::kPerTokenHead}},
    {"e5m2 per-token-head", {KvDtype::kFp8E5M2, KvScaling::kPerTokenHead}},
    {"e4m3 mla-block128", {KvDtype::kFp8E4M3, KvScaling::kMlaBlock128}},
}};

std::string AllowedFormatNames() {
  std::string names;
  for (const NamedFormat& named : kNamedFormats) {
    names += (names.empty() ? "'" : ", '") + std::string(named.name) + "'";
  }
  return names;
}

Status ValidateFormat(const KvCacheShape& shape) {
  const KvFormat format = shape.format;
  bool known = false;
  for (const NamedFormat& named : kNamedFormats) known = known || named.format == format;
  if (!known) {
    return InvalidArgumentError("unsupported KV cache format (dtype " +
                                std::to_string(static_cast<int>(format.dtype)) + ", scaling " +
                                std::to_string(static_cast<int>(format.scaling)) +
                                "); supported: " + AllowedFormatNames());
  }
  if (format.scaling == KvScaling::kMlaBlock128 && shape.kind != AttentionKind::kMla) {
    return InvalidArgumentError(
        "format 'e4m3 mla-block128' is FlashMLA's MLA layout; a GQA "
        "cache supports bf16, per-tensor and per-token-head formats");
  }
  return Status::Ok();
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

int64_t KvRowBytes(const KvCacheShape& shape) {
  if (shape.format.scaling == KvScaling::kMlaBlock128) return kMlaBlockRowBytes;
  const int64_t element_bytes = shape.format.dtype == KvDtype::kBf16 ? 2 : 1;
  return element_bytes * shape.head_dim;
}

int64_t KvPoolBytes(const KvCacheShape& shape) {
  return int64_t{shape.num_pages} * shape.page_size * shape.num_kv_heads * KvRowBytes(shape);
}

int64_t KvScalePoolFloats(const KvCacheShape& shape) {
  if (shape.format.scaling != KvScaling::kPerTokenHead) return 0;
  return int64_t{shape.num_pages} * shape.page_size * shape.num_kv_heads;
}

int64_t KvBytesPerToken(const KvCacheShape& shape) {
  const int64_t pools = shape.kind == AttentionKind::kGqa ? 2 : 1;
  const int64_t scale_bytes =
      shape.format.scaling == KvScaling::kPerTokenHead ? int64_t{sizeof(float)} : 0;
  return pools * shape.num_kv_heads * (KvRowBytes(shape) + scale_bytes);
}

std::vector<KvFormat> AllKvFormats() {
  std::vector<KvFormat> formats;
  for (const NamedFormat& named : kNamedFormats) formats.push_back(named.format);
  return formats;
}

std::string KvFormatName(KvFormat format) {
  for (const NamedFormat& named : kNamedFormats) {
    if (named.format == format) return named.name;
  }
  return "unknown";
}

Result<KvFormat> ParseKvFormat(std::string_view text) {
  for (const NamedFormat& named : kNamedFormats) {
    if (text == named.name) return named.format;
  }
  return InvalidArgumentError("unknown KV cache format '" + std::string(text) +
                              "'; allowed: " + AllowedFormatNames());
}

}  // namespace kvsim
