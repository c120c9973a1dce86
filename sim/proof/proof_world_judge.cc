// The proof world's judgement of each access: the verdict the theorem predicts, the pages a passed
// check let through, and every token the kernel wrote or read, against the oracle.
#include <cstdint>
#include <string>

#include "base/check.h"
#include "sim/proof/proof_world.h"

namespace kvsim::sim {
namespace {

// The world follows allocations, not values: every write has this content, and every read
// expects it.
constexpr uint64_t kNoContent = 0;

}  // namespace

TagCheckResult ProofWorld::Predict(int32_t r, size_t b) const {
  const Request& request = requests_[static_cast<size_t>(r)];
  const StepTable& table = scratch_->table;
  const int32_t p = config_.page_size;
  const int32_t first = table.access == KvAccess::kWrite ? table.first_tokens[b] : 0;
  const int32_t end = table.seq_lens[b];
  const auto verdict = [](TagCheckCode code, int32_t page) {
    return TagCheckResult{static_cast<int32_t>(code), page};
  };
  if (first < 0 || end < first || (end + p - 1) / p > table.stride) {
    return verdict(TagCheckCode::kBadRange, -1);
  }
  if (first == end) return verdict(TagCheckCode::kOk, -1);
  const uint64_t mask = TagMask(config_.tags.width_bits);
  for (int32_t i = first / p; i < (end + p - 1) / p; ++i) {
    const size_t logical = static_cast<size_t>(i);
    if (logical >= request.recorded.size()) return verdict(TagCheckCode::kUnrecorded, i);
    const int32_t q = table.Entry(b, i);
    if (q < 0 || q >= config_.num_pages) return verdict(TagCheckCode::kOutOfRange, i);
    if (q != request.recorded[logical].page) return verdict(TagCheckCode::kWrongPage, i);
    const uint64_t reallocations =
        static_cast<uint64_t>(oracle_.epoch(q) - request.identity[logical].epoch);
    if (config_.tags.policy == TagPolicy::kGeneration) {
      // Generation tags count allocations: the tag differs unless 2^w divides the reallocations.
      if ((reallocations & mask) != 0) return verdict(TagCheckCode::kStaleTag, i);
    } else {
      // A random tag changes on every allocation (A4), so one reallocation always shows; after
      // more, the grant is stale exactly when the pool's tag, the truth the tracker's copy must
      // follow, differs from the recorded one.
      if (reallocations == 1 || pool_.tag(q) != request.recorded[logical].tag) {
        return verdict(TagCheckCode::kStaleTag, i);
      }
    }
  }
  return verdict(TagCheckCode::kOk, -1);
}

Status ProofWorld::CheckPassedRow(int32_t r, size_t b, WorldOpReport& report) {
  const Request& request = requests_[static_cast<size_t>(r)];
  const StepTable& table = scratch_->table;
  const int32_t p = config_.page_size;
  const int32_t first = table.access == KvAccess::kWrite ? table.first_tokens[b] : 0;
  const int32_t end = table.seq_lens[b];
  for (int32_t i = first / p; i < (end + p - 1) / p && first < end; ++i) {
    const int32_t q = table.Entry(b, i);
    const Allocation& identity = request.identity[static_cast<size_t>(i)];
    if (oracle_.epoch(q) != identity.epoch) {
      // Reallocated, yet the tag matched: a multiple of 2^w times with generation tags (the
      // theorem's exact escape condition), or a random tag that came back.
      ++report.escapes;
      escaped_ = true;
    } else if (oracle_.Current(q) != identity) {
      if (InTheoremScope(*act_)) {
        return Violation("r" + std::to_string(r) + " passed at logical page " + std::to_string(i) +
                         " on an allocation it was never granted");
      }
      ++report.out_of_scope_passes;
    }
  }
  return Status::Ok();
}

Status ProofWorld::Write(int32_t r, size_t b, WorldOpReport& report) {
  const Request& request = requests_[static_cast<size_t>(r)];
  const StepTable& launched = scratch_->launched;
  const int32_t p = config_.page_size;
  const int32_t token = launched.seq_lens[b] - 1;
  const int32_t logical = token / p;
  const bool covered = Covered();
  const int32_t q = logical < launched.stride ? launched.Entry(b, logical) : -1;
  if (q < 0 || q >= config_.num_pages) {
    // Only an unchecked write gets here: it would land outside the cache.
    if (!covered) return Violation("an unchecked write outside the cache");
    ++report.silent_corruptions;
    return Status::Ok();
  }
  const size_t index = static_cast<size_t>(logical);
  const Allocation writer =
      index < request.identity.size() ? request.identity[index] : Allocation{-2 - r, 0, false};
  if (oracle_.Write(q, token % p, writer, kNoContent) != AccessVerdict::kOk) {
    if (!covered) {
      return Violation("r" + std::to_string(r) + " wrote token " + std::to_string(token) +
                       " into physical page " + std::to_string(q) +
                       ", which belongs to another allocation");
    }
    ++report.silent_corruptions;
  }
  return Status::Ok();
}

Status ProofWorld::Read(int32_t r, size_t b, WorldOpReport& report) {
  const Request& request = requests_[static_cast<size_t>(r)];
  const StepTable& launched = scratch_->launched;
  const int32_t p = config_.page_size;
  for (int32_t token = 0; token < launched.seq_lens[b]; ++token) {
    const size_t logical = static_cast<size_t>(token / p);
    const int32_t q = launched.Entry(b, token / p);
    const AccessVerdict verdict = oracle_.Read(q, token % p, request.identity[logical], kNoContent);
    if (verdict == AccessVerdict::kOk) continue;
    KVSIM_CHECK(verdict != AccessVerdict::kWrongContent) << "the world writes no content";
    if (verdict == AccessVerdict::kUnwritten) {
      // A slot of the request's own page that this allocation never wrote (it holds nothing, or
      // the page's previous owner's data): a token position went wrong inside a page the request
      // rightly holds, below the check's page granularity (docs/integrity.md: the seal's layer).
      // With writes checked, only a length that runs past the recorded one gets here.
      if (act_ == BookkeepingAct::kLengthOverrun) {
        ++report.intra_page_overruns;
        continue;
      }
      if (!Covered()) {
        return Violation("r" + std::to_string(r) + " read token " + std::to_string(token) +
                         ", which its allocation of physical page " + std::to_string(q) +
                         " never wrote");
      }
      ++report.silent_corruptions;
      continue;
    }
    if (!Covered()) {
      return Violation("r" + std::to_string(r) + " read token " + std::to_string(token) +
                       " from physical page " + std::to_string(q) +
                       " and got another allocation's data");
    }
    ++report.silent_corruptions;
  }
  return Status::Ok();
}

}  // namespace kvsim::sim
