// Fault sites and the injector.
#include "sim/faults/fault_plan.h"

namespace kvsim::sim {

const char* FaultSiteName(FaultSite site) {
  switch (site) {
    case FaultSite::kDuplicateNotRewritten:
      return "duplicate_not_rewritten";
    case FaultSite::kNoHitTableZeroed:
      return "no_hit_table_zeroed";
  }
  return "unknown";
}

const char* FaultSiteBug(FaultSite site) {
  switch (site) {
    case FaultSite::kDuplicateNotRewritten:
      return "mini-sglang PR 142: duplicate pages freed after an insert, the table not rewritten";
    case FaultSite::kNoHitTableZeroed:
      return "vLLM PR 7018: requests without a cache hit got block table [0, 0, ...]";
  }
  return "unknown";
}

Result<FaultSite> ParseFaultSite(const std::string& name) {
  std::string names;
  for (int i = 0; i < kFaultSites; ++i) {
    const FaultSite site = static_cast<FaultSite>(i);
    if (name == FaultSiteName(site)) return site;
    names += (names.empty() ? "" : ", ") + std::string(FaultSiteName(site));
  }
  return InvalidArgumentError("unknown fault site '" + name + "'; allowed: " + names);
}

bool FaultPlan::any() const {
  for (int64_t p : ppm) {
    if (p > 0) return true;
  }
  return false;
}

FaultInjector::FaultInjector(const FaultPlan& plan, uint64_t seed) : plan_(plan), prng_(seed) {}

bool FaultInjector::Fires(FaultSite site) {
  const int64_t ppm = plan_.ppm[static_cast<size_t>(site)];
  if (ppm <= 0) return false;
  if (!prng_.chance(static_cast<uint64_t>(ppm), 1'000'000)) return false;
  ++fired_[static_cast<size_t>(site)];
  return true;
}

int64_t FaultInjector::fired_total() const {
  int64_t total = 0;
  for (int64_t f : fired_) total += f;
  return total;
}

}  // namespace kvsim::sim
