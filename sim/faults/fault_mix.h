// FaultMix: bookkeeping bugs planted on purpose at the simulated server's decision points, as
// FoundationDB's BUGGIFY plants them: each site is switched on by the mix and then fires with its
// probability, drawn from the run's fault stream. With no mix the sites cost one null check.
//
// A planted bug that the server then commits is not an error of the run: what follows (a check
// that catches it, or a silent corruption the oracle sees) is what the run reports. Each site's
// expected outcome is written in the registry (sim/faults/fault_registry.h) before any run.
#pragma once

#include <array>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/prng.h"
#include "base/status.h"
#include "sim/faults/fault_registry.h"

namespace kvsim::sim {

// The site named `name`; InvalidArgument listing the sites otherwise.
Result<FaultSite> ParseFaultSite(const std::string& name);
// A row's name, upstream bug and expected class (kFaultRegistry).
inline const char* FaultSiteName(FaultSite site) { return FaultRowOf(site).name; }
inline const char* FaultSiteBug(FaultSite site) { return FaultRowOf(site).bug; }
inline FaultClass FaultSiteExpected(FaultSite site) { return FaultRowOf(site).expected; }

// The probability, in parts per million, that each site fires when the server reaches it.
struct FaultMix {
  std::array<int64_t, kFaultSites> ppm{};
  bool any() const;
};

// What a planted bug changed when it fired: pages of one pool whose bookkeeping it touched (freed,
// mapped without a reference, published, zeroed in a row, released again) and the request whose
// tables or rows it changed.
struct FaultEffect {
  int32_t pool = 0;      // the pool's index in the server (0: the first or only pool)
  int64_t request = -1;  // -1: none
  std::vector<int32_t> pages;
};

// Decides, site by site, whether a planted bug fires, from its own stream, and records what each
// bug that fired changed. A bug counts as fired only once it changed something (Changed): a site
// can be drawn and find nothing to change (docs/faults.md lists which).
class FaultInjector {
 public:
  FaultInjector(const FaultMix& mix, uint64_t seed);
  // Whether the bug at `site` is drawn to fire now; draws from the stream only for a site that is
  // on. The site then acts, and calls Changed if its action changed anything.
  bool Fires(FaultSite site);
  // The bug at `site`, just drawn by Fires, changed `effect`.
  void Changed(FaultSite site, const FaultEffect& effect);
  // Whether a bug that fired changed `request`, or one of `pages` of `pool`: a check that refuses
  // an access there refuses what a bug touched.
  bool Touched(int32_t pool, int64_t request, const std::vector<int32_t>& pages) const;
  // Whether `site` is on at all (a decision point that needs preparation asks first).
  bool On(FaultSite site) const { return mix_.ppm[static_cast<size_t>(site)] > 0; }
  // Bugs at `site` that fired and changed something.
  int64_t fired(FaultSite site) const { return fired_[static_cast<size_t>(site)]; }
  // Times `site` was drawn to fire, with or without an effect.
  int64_t drawn(FaultSite site) const { return drawn_[static_cast<size_t>(site)]; }
  int64_t fired_total() const;
  // Fired bugs that corrupt bookkeeping: all but the negative control's.
  int64_t fired_corrupting() const;
  const FaultMix& mix() const { return mix_; }

 private:
  FaultMix mix_;
  Prng prng_;
  // The negative control's own stream: it is reached in kernel mode only, so drawing it from the
  // shared stream would make the other sites fire differently in kernel and timing mode.
  Prng control_prng_;
  std::array<int64_t, kFaultSites> drawn_{};
  std::array<int64_t, kFaultSites> fired_{};
  std::set<std::pair<int32_t, int32_t>> touched_pages_;  // (pool, page)
  std::set<int64_t> touched_requests_;
};

}  // namespace kvsim::sim
