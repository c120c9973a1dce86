// Fault sites, their catalogue and the injector.
#include "sim/faults/fault_plan.h"

#include "base/check.h"

namespace kvsim::sim {

const char* FaultSiteName(FaultSite site) {
  switch (site) {
    case FaultSite::kDuplicateNotRewritten:
      return "duplicate_not_rewritten";
    case FaultSite::kRematchKeepsLength:
      return "rematch_keeps_length";
    case FaultSite::kAbortFreesTreePages:
      return "abort_frees_tree_pages";
    case FaultSite::kTransferAbortFrees:
      return "transfer_abort_frees";
    case FaultSite::kAsyncFreeBeforeWrite:
      return "async_free_before_write";
    case FaultSite::kPublishBeforeWritten:
      return "publish_before_written";
    case FaultSite::kNoHitTableZeroed:
      return "no_hit_table_zeroed";
    case FaultSite::kReadPastLength:
      return "read_past_length";
    case FaultSite::kCommittedAheadOfWrites:
      return "committed_ahead_of_writes";
    case FaultSite::kPrefixHashCollision:
      return "prefix_hash_collision";
    case FaultSite::kDoubleFree:
      return "double_free";
    case FaultSite::kBatchCompositionNoise:
      return "batch_composition_noise";
  }
  return "unknown";
}

const char* FaultSiteBug(FaultSite site) {
  switch (site) {
    case FaultSite::kDuplicateNotRewritten:
      return "mini-sglang PR 142: duplicate pages freed after an insert, the table not rewritten";
    case FaultSite::kRematchKeepsLength:
      return "SGLang PR 24193 / issue 23392: a re-match moves the prefix but not the protected "
             "length; release frees pages the tree owns";
    case FaultSite::kAbortFreesTreePages:
      return "SGLang issue 38319 / PR 38355: an abort frees pages the tree still references";
    case FaultSite::kTransferAbortFrees:
      return "SGLang 24527, vLLM PR 56104: an abort frees decode pages a transfer still writes";
    case FaultSite::kAsyncFreeBeforeWrite:
      return "vLLM PRs 45357 / 45096: asynchronous scheduling freed pages the next step wrote";
    case FaultSite::kPublishBeforeWritten:
      return "vLLM PR 38715, SGLang PR 24175: a prefix published before its KV was written";
    case FaultSite::kNoHitTableZeroed:
      return "vLLM PR 7018: requests without a cache hit got block table [0, 0, ...]";
    case FaultSite::kReadPastLength:
      return "TensorRT-LLM PR 18754, vLLM 54193: a length mask that reads past the written length";
    case FaultSite::kCommittedAheadOfWrites:
      return "a committed length ahead of the slots actually written";
    case FaultSite::kPrefixHashCollision:
      return "vLLM GHSA-rm76-4mrf-v9r8: predictable prefix hashes collided; requests swapped "
             "content";
    case FaultSite::kDoubleFree:
      return "SGLang PR 18694: a page freed twice, later granted to two owners";
    case FaultSite::kBatchCompositionNoise:
      return "SGLang 22819, vLLM 39146 (the symptom without the cause): outputs that vary with "
             "batch composition, no stale page";
  }
  return "unknown";
}

FaultClass FaultSiteExpected(FaultSite site) {
  switch (site) {
    case FaultSite::kDuplicateNotRewritten:
    case FaultSite::kRematchKeepsLength:
    case FaultSite::kAbortFreesTreePages:
    case FaultSite::kNoHitTableZeroed:
      return FaultClass::kRead;
    case FaultSite::kTransferAbortFrees:
    case FaultSite::kAsyncFreeBeforeWrite:
      return FaultClass::kWrite;
    case FaultSite::kDoubleFree:
      return FaultClass::kReadWrite;
    case FaultSite::kPublishBeforeWritten:
    case FaultSite::kReadPastLength:
    case FaultSite::kCommittedAheadOfWrites:
      return FaultClass::kWrittenState;
    case FaultSite::kPrefixHashCollision:
      return FaultClass::kNone;
    case FaultSite::kBatchCompositionNoise:
      return FaultClass::kControl;
  }
  return FaultClass::kNone;
}

const char* FaultClassName(FaultClass fault_class) {
  switch (fault_class) {
    case FaultClass::kRead:
      return "R";
    case FaultClass::kWrite:
      return "W";
    case FaultClass::kReadWrite:
      return "RW";
    case FaultClass::kWrittenState:
      return "S";
    case FaultClass::kNone:
      return "N";
    case FaultClass::kControl:
      return "control";
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

// Any other seed gives the control an independent stream (Prng expands its seed by SplitMix64).
constexpr uint64_t kControlStream = 0xc0a7'2015'0000'0015;

FaultInjector::FaultInjector(const FaultPlan& plan, uint64_t seed)
    : plan_(plan), prng_(seed), control_prng_(seed ^ kControlStream) {}

bool FaultInjector::Fires(FaultSite site) {
  const int64_t ppm = plan_.ppm[static_cast<size_t>(site)];
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
