// Page tags: the width and policy of the tag each physical page carries, and the rule that gives a
// page a new tag every time it is allocated (docs/integrity.md).
#pragma once

#include <cstdint>

#include "base/prng.h"
#include "base/status.h"

namespace kvsim {

// How a page's next tag is chosen.
enum class TagPolicy {
  // A per-page generation counter: next = current + 1 mod 2^width. A stale reference escapes the
  // check only after exactly 2^width reallocations of its page.
  kGeneration,
  // A tag drawn from the run's seed, as memory tagging (ARM MTE, HWASan) does, among the
  // 2^width - 1 values that differ from the current tag, so a tag still changes on every
  // allocation.
  kRandom,
};

// "generation", "random".
const char* TagPolicyName(TagPolicy policy);

// The supported widths: 2, 4, 8, 16, 32, 64 bits.
inline constexpr int32_t kTagWidthsBits[] = {2, 4, 8, 16, 32, 64};

// The width and policy of page tags, and the seed of random tags.
struct TagConfig {
  int32_t width_bits = 64;  // one of kTagWidthsBits; tags lie in [0, 2^width_bits)
  TagPolicy policy = TagPolicy::kGeneration;
  uint64_t seed = 0;  // the random policy's stream (and its initial tags)
};

// InvalidArgument naming the allowed widths when width_bits is not one of them.
Status ValidateTagConfig(const TagConfig& config);

// 2^width_bits - 1: the largest tag. width_bits is one of kTagWidthsBits.
uint64_t TagMask(int32_t width_bits);

// Produces tags under one TagConfig; copyable, so a copied pool continues the same stream.
class TagSource {
 public:
  // `config` must be valid (checked).
  explicit TagSource(const TagConfig& config);

  // The tag of a page that was never allocated: 0 for kGeneration, a draw for kRandom.
  uint64_t InitialTag();

  // The tag of a page being allocated whose tag is `current`: never equal to `current`, never
  // above the mask.
  uint64_t NextTag(uint64_t current);

 private:
  TagConfig config_;
  uint64_t mask_;
  Prng prng_;
};

}  // namespace kvsim
