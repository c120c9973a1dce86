// Depth-first exploration with a memo of (state up to symmetry, operations left), counting the
// sequences covered by dynamic programming over the memo.
#include "tests/sim/integrity/exhaustive_checker.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace kvsim::testing {
namespace {

int64_t SaturatingAdd(int64_t a, int64_t b) { return a > INT64_MAX - b ? INT64_MAX : a + b; }

// 128 bits of a state's key: two independently mixed 64-bit chains. Keeping hashes instead of
// keys bounds memory; with 10^8 states a collision, which would wrongly prune one state, has a
// probability near 10^16 / 2^128.
struct Hash128 {
  uint64_t low;
  uint64_t high;
  bool operator==(const Hash128& other) const { return low == other.low && high == other.high; }
};

struct Hash128Hasher {
  size_t operator()(const Hash128& hash) const { return static_cast<size_t>(hash.low); }
};

// The splitmix64 finaliser: a bijective mix of all 64 bits.
uint64_t Mix(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

Hash128 HashWords(const std::vector<uint64_t>& words) {
  Hash128 hash{0x9e3779b97f4a7c15ULL ^ words.size(), 0x632be59bd9b4e019ULL + words.size()};
  for (uint64_t word : words) {
    hash.low = Mix(hash.low ^ word) * 0x9e3779b97f4a7c15ULL;
    hash.high = Mix(hash.high + word + 0xd6e8feb86659fd93ULL) ^ (hash.high >> 17);
  }
  return hash;
}

class Explorer {
 public:
  Explorer(int32_t requests, bool merge, ExhaustiveTotals& totals)
      : requests_(requests), merge_(merge), totals_(totals) {}

  // What a visit found: the sequences starting at the world (itself included) within the budget,
  // and the key of the world's class.
  struct Visited {
    int64_t sequences = 0;
    Hash128 key{0, 0};
  };

  Result<Visited> Visit(const sim::ProofWorld& world, int32_t ops_left) {
    // The smallest encoding over all orders of the requests: one name per class of states equal
    // up to renaming requests and pages.
    std::vector<int32_t> order(static_cast<size_t>(requests_));
    std::iota(order.begin(), order.end(), 0);
    best_.clear();
    do {
      key_.clear();
      world.AppendKey(order, key_);
      if (best_.empty() || key_ < best_) best_.swap(key_);
    } while (std::next_permutation(order.begin(), order.end()));
    if (seen_states_.insert(HashWords(best_)).second) ++totals_.states;
    best_.push_back(static_cast<uint64_t>(ops_left));
    const Hash128 key = HashWords(best_);
    if (merge_) {
      const auto known = sequences_from_.find(key);
      if (known != sequences_from_.end()) return Visited{known->second, key};
    }
    // Unmerged, a class met again is walked again but counted once.
    const bool first = expanded_.insert(key).second;
    if (first) ++totals_.explored;
    int64_t sequences = 1;
    std::vector<uint64_t> transitions;  // what each operation did and led to, for comparison
    for (const sim::WorldOp& op : ops_left > 0 ? world.EnabledOps() : std::vector<sim::WorldOp>()) {
      KVSIM_ASSIGN_OR_RETURN(sim::ProofWorld next, world.Clone());
      KVSIM_ASSIGN_OR_RETURN(const sim::WorldOpReport report, next.Apply(op));
      if (first) {
        ++totals_.transitions;
        Count(next, report);
      }
      KVSIM_ASSIGN_OR_RETURN(const Visited below, Visit(next, ops_left - 1));
      sequences = SaturatingAdd(sequences, below.sequences);
      if (!merge_) transitions.push_back(Digest(next, report, below.key));
    }
    if (merge_) {
      sequences_from_.emplace(key, sequences);
    } else {
      std::sort(transitions.begin(), transitions.end());
      const auto [known, inserted] = transitions_from_.emplace(key, HashWords(transitions));
      if (!inserted && !(known->second == HashWords(transitions))) {
        return InternalError(
            "two states the key merges differ in their transitions; one is reached by: " +
            world.History());
      }
    }
    return Visited{sequences, key};
  }

 private:
  void Count(const sim::ProofWorld& world, const sim::WorldOpReport& report) {
    totals_.requests_checked += report.requests_checked;
    int64_t aborts = 0;
    for (int code = 0; code < 6; ++code) {
      totals_.aborts[code] += report.aborts[code];
      aborts += report.aborts[code];
    }
    totals_.escapes += report.escapes;
    totals_.out_of_scope_passes += report.out_of_scope_passes;
    totals_.silent_corruptions += report.silent_corruptions;
    totals_.intra_page_overruns += report.intra_page_overruns;
    totals_.pool_refusals += report.pool_refusals;
    if (world.act_planted()) {
      ExhaustiveTotals::ActTotals& act = totals_.by_act[*world.act()];
      act.caught += aborts;
      act.silent += report.silent_corruptions;
      act.out_of_scope += report.out_of_scope_passes;
      act.overruns += report.intra_page_overruns;
    }
  }

  // One transition as a word: its report, the act planted by then, and where it led.
  static uint64_t Digest(const sim::ProofWorld& next, const sim::WorldOpReport& report,
                         const Hash128& to) {
    std::vector<uint64_t> words = {
        static_cast<uint64_t>(report.requests_checked),
        static_cast<uint64_t>(report.escapes),
        static_cast<uint64_t>(report.out_of_scope_passes),
        static_cast<uint64_t>(report.silent_corruptions),
        static_cast<uint64_t>(report.intra_page_overruns),
        static_cast<uint64_t>(report.pool_refusals),
        next.act_planted() ? static_cast<uint64_t>(*next.act()) : ~uint64_t{0},
        to.low,
        to.high};
    for (int64_t aborts : report.aborts) words.push_back(static_cast<uint64_t>(aborts));
    return HashWords(words).low;
  }

  const int32_t requests_;
  const bool merge_;
  ExhaustiveTotals& totals_;
  std::vector<uint64_t> key_;  // reused for every key
  std::vector<uint64_t> best_;
  // Membership and look-up only: never iterated, so their order cannot reach a result.
  std::unordered_set<Hash128, Hash128Hasher> seen_states_;
  std::unordered_set<Hash128, Hash128Hasher> expanded_;
  std::unordered_map<Hash128, int64_t, Hash128Hasher> sequences_from_;
  std::unordered_map<Hash128, Hash128, Hash128Hasher> transitions_from_;
};

}  // namespace

Result<ExhaustiveTotals> RunExhaustive(const ExhaustiveBounds& bounds, Backend& backend) {
  ExhaustiveTotals totals;
  KVSIM_ASSIGN_OR_RETURN(const sim::ProofWorld start,
                         sim::ProofWorld::Create(bounds.world, backend));
  Explorer explorer(bounds.world.num_requests, bounds.merge_states, totals);
  KVSIM_ASSIGN_OR_RETURN(const Explorer::Visited visited, explorer.Visit(start, bounds.max_ops));
  totals.sequences = visited.sequences;
  return totals;
}

namespace {

// "1, 3, 4": the registry rows whose act is `act`.
std::string RowsOf(sim::BookkeepingAct act) {
  std::string rows;
  for (const sim::FaultRow& row : sim::kFaultRegistry) {
    if (row.act == act) rows += (rows.empty() ? "" : ", ") + std::to_string(row.number);
  }
  return rows;
}

}  // namespace

const ExhaustiveTotals::ActTotals& ExhaustiveTotals::after(sim::BookkeepingAct act) const {
  static const ActTotals kNone;
  const auto found = by_act.find(act);
  return found == by_act.end() ? kNone : found->second;
}

std::string ExhaustiveTotals::Summary(const ExhaustiveBounds& bounds, double seconds) const {
  const sim::ProofWorldConfig& w = bounds.world;
  std::string text = fmt::format(
      "pool {} pages, {} requests, page size {}, {}-bit {} tags, {} reuse, writes {}, every "
      "sequence of up to {} operations with at most one act planted among them{}\n"
      "  {} states explored ({} with budget, {} transitions), {} operation sequences, {:.1f} s\n"
      "  {} requests checked; aborts: {} bad range, {} unrecorded, {} out of range, {} wrong "
      "page, {} stale tag\n"
      "  {} escapes (tag wrap), {} out-of-scope passes, {} silent corruptions, {} intra-page "
      "overruns, {} pool refusals\n",
      w.num_pages, w.num_requests, w.page_size, w.tags.width_bits, TagPolicyName(w.tags.policy),
      ReuseOrderName(w.reuse_order), w.check_writes ? "checked" : "unchecked", bounds.max_ops,
      bounds.merge_states ? "" : " (states not merged: every sequence walked)", states, explored,
      transitions, sequences, seconds, requests_checked, aborts[1], aborts[2], aborts[3], aborts[4],
      aborts[5], escapes, out_of_scope_passes, silent_corruptions, intra_page_overruns,
      pool_refusals);
  for (const auto& [act, t] : by_act) {
    text += fmt::format(
        "  after {:<16} (rows {}): {} aborts, {} silent corruptions, {} out-of-scope passes, {} "
        "intra-page overruns\n",
        sim::BookkeepingActName(act), RowsOf(act), t.caught, t.silent, t.out_of_scope, t.overruns);
  }
  return text;
}

}  // namespace kvsim::testing
