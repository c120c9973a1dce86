// FaultPlan: bookkeeping bugs planted on purpose at the simulated server's decision points, as
// FoundationDB's BUGGIFY plants them: each site is switched on by the plan and then fires with its
// probability, drawn from the run's fault stream. With no plan the sites cost one null check.
//
// A planted bug that the server then commits is not an error of the run: what follows (a check
// that catches it, or a silent corruption the oracle sees) is what the run reports.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "base/prng.h"
#include "base/status.h"

namespace kvsim::sim {

// The decision points a plan can act at, each the site of a real bug.
enum class FaultSite : uint8_t {
  // After a prefix-cache insert, a page another request cached first is freed as a duplicate but
  // the request's table is not rewritten: it still records and maps the freed page
  // (mini-sglang PR 142).
  kDuplicateNotRewritten,
  // A request admitted without a prefix-cache hit gets block-table entries [0, 0, ...] for the
  // pages of its first chunk, while the server records the pages it granted (vLLM PR 7018).
  kNoHitTableZeroed,
};
inline constexpr int kFaultSites = 2;

// "duplicate_not_rewritten", "no_hit_table_zeroed".
const char* FaultSiteName(FaultSite site);
// The site named `name`; InvalidArgument listing the sites otherwise.
Result<FaultSite> ParseFaultSite(const std::string& name);
// One line naming the real bug a site plants.
const char* FaultSiteBug(FaultSite site);

// The probability, in parts per million, that each site fires when the server reaches it.
struct FaultPlan {
  std::array<int64_t, kFaultSites> ppm{};
  bool any() const;
};

// Decides, site by site, whether a planted bug fires, from its own stream.
class FaultInjector {
 public:
  FaultInjector(const FaultPlan& plan, uint64_t seed);
  // Whether the bug at `site` fires now; draws from the stream only for a site that is on.
  bool Fires(FaultSite site);
  int64_t fired(FaultSite site) const { return fired_[static_cast<size_t>(site)]; }
  int64_t fired_total() const;
  const FaultPlan& plan() const { return plan_; }

 private:
  FaultPlan plan_;
  Prng prng_;
  std::array<int64_t, kFaultSites> fired_{};
};

}  // namespace kvsim::sim
