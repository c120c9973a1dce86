// Tag widths, the tag mask, and the two tag policies.
#include "sim/memory/page_tags.h"

#include <string>

namespace kvsim {

const char* TagPolicyName(TagPolicy policy) {
  return policy == TagPolicy::kGeneration ? "generation" : "random";
}

Status ValidateTagConfig(const TagConfig& config) {
  for (int32_t width : kTagWidthsBits) {
    if (config.width_bits == width) return Status::Ok();
  }
  return InvalidArgumentError("tag width " + std::to_string(config.width_bits) +
                              " bits is not supported; allowed: 2, 4, 8, 16, 32, 64");
}

uint64_t TagMask(int32_t width_bits) {
  KVSIM_CHECK(ValidateTagConfig(TagConfig{width_bits, TagPolicy::kGeneration, 0}).ok())
      << width_bits;
  return width_bits == 64 ? ~uint64_t{0} : (uint64_t{1} << width_bits) - 1;
}

TagSource::TagSource(const TagConfig& config)
    : config_(config), mask_(TagMask(config.width_bits)), prng_(config.seed) {}

uint64_t TagSource::InitialTag() {
  return config_.policy == TagPolicy::kGeneration ? 0 : prng_.next_u64() & mask_;
}

uint64_t TagSource::NextTag(uint64_t current) {
  KVSIM_CHECK_LE(current, mask_);
  uint64_t next;
  if (config_.policy == TagPolicy::kGeneration) {
    next = (current + 1) & mask_;
  } else {
    // Uniform over the mask_ values other than `current`: draw from [0, mask_ - 1] and step over
    // `current`. (mask_ = 2^w - 1 is exactly the number of such values.)
    next = prng_.below(mask_);
    if (next >= current) ++next;
  }
  KVSIM_CHECK_NE(next, current) << "a page's tag must change on every allocation";
  KVSIM_CHECK_LE(next, mask_);
  return next;
}

}  // namespace kvsim
