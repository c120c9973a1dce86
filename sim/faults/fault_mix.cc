// Parsing fault sites, and the injector.
#include "sim/faults/fault_mix.h"

#include "base/check.h"

namespace kvsim::sim {

Result<FaultSite> ParseFaultSite(const std::string& name) {
  std::string names;
  for (int i = 0; i < kFaultSites; ++i) {
    const FaultSite site = static_cast<FaultSite>(i);
    if (name == FaultSiteName(site)) return site;
    names += (names.empty() ? "" : ", ") + std::string(FaultSiteName(site));
  }
  return InvalidArgumentError("unknown fault site '" + name + "'; allowed: " + names);
}

bool FaultMix::any() const {
  for (int64_t p : ppm) {
    if (p > 0) return true;
  }
  return false;
}

// Any other seed gives the control an independent stream (Prng expands its seed by SplitMix64).
constexpr uint64_t kControlStream = 0xc0a7'2015'0000'0015;

FaultInjector::FaultInjector(const FaultMix& mix, uint64_t seed)
    : mix_(mix), prng_(seed), control_prng_(seed ^ kControlStream) {}

bool FaultInjector::Fires(FaultSite site) {
  const int64_t ppm = mix_.ppm[static_cast<size_t>(site)];
  if (ppm <= 0) return false;
  Prng& stream = FaultSiteExpected(site) == FaultClass::kControl ? control_prng_ : prng_;
  if (!stream.chance(static_cast<uint64_t>(ppm), 1'000'000)) return false;
  ++drawn_[static_cast<size_t>(site)];
  return true;
}

void FaultInjector::Changed(FaultSite site, const FaultEffect& effect) {
  ++fired_[static_cast<size_t>(site)];
  KVSIM_CHECK_LE(fired_[static_cast<size_t>(site)], drawn_[static_cast<size_t>(site)])
      << FaultSiteName(site) << " changed more often than it was drawn";
  if (effect.request >= 0) touched_requests_.insert(effect.request);
  for (int32_t page : effect.pages) touched_pages_.insert({effect.pool, page});
}

bool FaultInjector::Touched(int32_t pool, int64_t request,
                            const std::vector<int32_t>& pages) const {
  if (touched_requests_.count(request) > 0) return true;
  for (int32_t page : pages) {
    if (touched_pages_.count({pool, page}) > 0) return true;
  }
  return false;
}

int64_t FaultInjector::fired_total() const {
  int64_t total = 0;
  for (int64_t f : fired_) total += f;
  return total;
}

int64_t FaultInjector::fired_corrupting() const {
  int64_t total = 0;
  for (int site = 0; site < kFaultSites; ++site) {
    if (FaultSiteExpected(static_cast<FaultSite>(site)) == FaultClass::kControl) continue;
    total += fired_[static_cast<size_t>(site)];
  }
  return total;
}

}  // namespace kvsim::sim
