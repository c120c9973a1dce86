// StaleReadProbe: asks the real tag tracker (CPU backend) whether a read through one recorded
// grant would pass, for the narrow-tag properties and the escape-probability test.
#pragma once

#include <memory>

#include "kernels/backend.h"
#include "sim/integrity/integrity_tracker.h"
#include "sim/memory/page_pool.h"

namespace kvsim::testing {

// Checks one-token reads through recorded grants with a TagTracker that follows one pool.
class StaleReadProbe {
 public:
  // Follows `pool` from now on (its tracker consumes the pool's tag changes).
  explicit StaleReadProbe(PagePool& pool);

  // True when a one-token read of the page of `recorded`, mapped in the block table as recorded,
  // passes the check; otherwise the abort must be a stale tag (checked).
  bool ReadPasses(const PageGrant& recorded);

 private:
  std::unique_ptr<Backend> backend_;
  PagePool* pool_;
  TagTracker tracker_;
};

}  // namespace kvsim::testing
