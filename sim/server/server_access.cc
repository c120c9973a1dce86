// The simulated server's KV accesses: one launch table per access, the checks on it (the tags,
// the seal), the judgement of every refusal, the auditor, and the weaknesses that can be planted
// in the checks to show a campaign fails.
#include "sim/server/server.h"

#include <algorithm>
#include <utility>

namespace kvsim::sim {

Status Server::RunAccess(size_t instance, KvAccess access, const std::vector<ScheduledRow>& rows,
                         std::vector<bool>& proceed, bool checked) {
  Instance& p = *instances_[instance];
  // With nothing to check, judge or run the access (the no-op tracker, no seal, no oracle) there
  // is no table to build: the access only advances the books.
  if (!p.checks && !p.seal && p.auditor == nullptr) return Status::Ok();
  BuildStepTable(p.scheduler, rows, proceed, access, p.table);
  if (p.table.rows.empty()) return Status::Ok();
  const StepAccess step{report_.steps, queue_->now(), &p.scheduler, &rows, &proceed, &p.table};
  if (checked) {
    KVSIM_RETURN_IF_ERROR(CheckTags(instance, step, proceed));
    if (access == KvAccess::kRead) SealReads(instance, step, proceed);
  }
  if (config_.weakness == Weakness::kTableAfterCheck) ChangeLaunchedTable(instance, step);
  KVSIM_RETURN_IF_ERROR(Audit(instance, step));
  if (access == KvAccess::kWrite) SealWrites(instance, step);
  return Status::Ok();
}

Status Server::CheckTags(size_t instance, const StepAccess& step, std::vector<bool>& proceed) {
  Instance& p = *instances_[instance];
  if (!p.checks) return Status::Ok();
  const StepTable& table = *step.table;
  std::vector<std::vector<PageGrant>> books;
  if (config_.weakness == Weakness::kBooksFollowTags) books = BooksFollowTags(instance, step);
  Result<std::vector<StepAbort>> checked = p.checks->Check(table, p.scheduler, *step.rows);
  if (config_.weakness == Weakness::kBooksFollowTags)
    RestoreBooks(instance, step, std::move(books));
  KVSIM_ASSIGN_OR_RETURN(std::vector<StepAbort> aborts, std::move(checked));
  WeakenTagCheck(step, aborts);
  IntegrityCounts& counts = report_.integrity;
  ++(table.access == KvAccess::kWrite ? counts.write_checks : counts.read_checks);
  counts.rows_checked += static_cast<int64_t>(table.rows.size());
  std::vector<Refusal> refusals;
  for (const StepAbort& a : aborts) {
    ++counts.aborts[static_cast<size_t>(a.abort.reason)];
    ++counts.caught;
    MixHash(static_cast<uint64_t>(a.abort.reason) * 1000003u +
            static_cast<uint64_t>(a.abort.logical_page + 1));
    refusals.push_back({a.packed, a.abort.logical_page, a.abort.block_table_page, a.message});
  }
  RefuseRows(instance, step, refusals, proceed);
  return Status::Ok();
}

void Server::RefuseRows(size_t instance, const StepAccess& step,
                        const std::vector<Refusal>& refusals, std::vector<bool>& proceed) {
  // Every refusal is judged before any refused row is aborted: an abort releases pages, and the
  // oracle's claims would change under the judgements still to come.
  std::vector<RefusalKind> kinds;
  std::vector<int32_t> slots;
  for (const Refusal& refusal : refusals) {
    kinds.push_back(JudgeRefusal(instance, step, refusal.packed));
    slots.push_back(step.row(refusal.packed).slot);
  }
  for (size_t i = 0; i < refusals.size(); ++i) {
    proceed[step.table->rows[refusals[i].packed]] = false;
    Refuse(instance, slots[i], refusals[i], kinds[i]);
  }
}

Server::RefusalKind Server::JudgeRefusal(size_t instance, const StepAccess& step,
                                         size_t packed) const {
  const Instance& p = *instances_[instance];
  if (!faults_ || faults_->fired_corrupting() == 0) return RefusalKind::kFalseAlarm;
  if (p.auditor == nullptr || !p.auditor->Clean(step, packed)) return RefusalKind::kCatch;
  const std::vector<int32_t> pages =
      step.table->TouchedPages(packed, p.scheduler.config().page_size);
  return faults_->Touched(static_cast<int32_t>(instance), step.request(packed).spec.id, pages)
             ? RefusalKind::kOverRefusalExcused
             : RefusalKind::kOverRefusal;
}

void Server::Refuse(size_t instance, int32_t slot, const Refusal& refusal, RefusalKind kind) {
  Instance& p = *instances_[instance];
  const SimRequest& r = p.scheduler.request(slot);
  IntegrityCounts& counts = report_.integrity;
  if (kind == RefusalKind::kOverRefusalExcused) ++counts.over_refusals_excused;
  if (kind == RefusalKind::kOverRefusal) ++counts.over_refusals;
  if (kind == RefusalKind::kFalseAlarm || kind == RefusalKind::kOverRefusal) {
    // With no bug planted that corrupts, a refusal is a false alarm; after one, a refusal of an
    // access the oracle finds right and no fired bug touched is an over-refusal.
    Finding finding;
    finding.kind =
        kind == RefusalKind::kFalseAlarm ? Finding::Kind::kFalseAlarm : Finding::Kind::kOverRefusal;
    finding.step = report_.steps;
    finding.time_ns = queue_->now();
    finding.request = r.spec.id;
    finding.logical_page = refusal.logical_page;
    finding.page = refusal.page;
    finding.detail = p.name + " instance: " + refusal.message;
    AddFinding(std::move(finding));
  }
  if (timeline_ != nullptr) {
    timeline_->Instant(static_cast<int>(instance), queue_->now(), "abort",
                       "request " + std::to_string(r.spec.id) + ": " + refusal.message);
  }
  // A zombie has ended already: its write is dropped, and that is all. So has a request whose KV
  // is being copied out to the store: the copy is discarded, its pages released when it ends.
  if (r.zombie || r.phase == RequestPhase::kStoring) return;
  AbortRequest(instance, slot, refusal.message, *queue_);
}

void Server::SealWrites(size_t instance, const StepAccess& step) {
  Instance& p = *instances_[instance];
  if (!p.seal) return;
  const int32_t page_size = p.scheduler.config().page_size;
  const PagePool& pages = p.scheduler.pool();
  const StepTable& table = *step.table;
  for (size_t b = 0; b < table.rows.size(); ++b) {
    if (!step.runs(b)) continue;
    const ScheduledRow& row = step.row(b);
    for (int32_t position = row.first_token; position < row.first_token + row.tokens; ++position) {
      const int32_t logical = position / page_size;
      if (logical >= table.stride) break;
      const int32_t page = table.Entry(b, logical);
      if (page < 0 || page >= pages.num_pages()) continue;
      p.seal->OnWrite(page, position % page_size, pages.tag(page));
    }
  }
}

void Server::SealReads(size_t instance, const StepAccess& step, std::vector<bool>& proceed) {
  Instance& p = *instances_[instance];
  if (!p.seal) return;
  const StepTable& table = *step.table;
  std::vector<Refusal> refusals;
  for (size_t b = 0; b < table.rows.size(); ++b) {
    if (!step.runs(b)) continue;
    const SealBreach breach =
        p.seal->CheckRead(&table.table[b * static_cast<size_t>(table.stride)], table.stride,
                          table.seq_lens[b], p.scheduler.pool());
    if (!breach.breached()) continue;
    if (config_.weakness == Weakness::kSealOneSlotShort && breach.read - breach.written == 1) {
      continue;
    }
    ++report_.integrity.sealed;
    MixHash(0x5ea1u + static_cast<uint64_t>(breach.logical_page));
    refusals.push_back(
        {b, breach.logical_page, breach.page, "the seal refused a read: " + breach.Describe()});
  }
  RefuseRows(instance, step, refusals, proceed);
}

Status Server::Audit(size_t instance, const StepAccess& step) {
  Instance& p = *instances_[instance];
  if (p.auditor == nullptr) return Status::Ok();
  std::vector<Finding> findings;
  KVSIM_RETURN_IF_ERROR(step.table->access == KvAccess::kWrite
                            ? p.auditor->Writes(step, report_.integrity, findings)
                            : p.auditor->Reads(step, report_.integrity, findings));
  for (Finding& finding : findings) AddFinding(std::move(finding));
  return Status::Ok();
}

void Server::WeakenTagCheck(const StepAccess& step, std::vector<StepAbort>& aborts) const {
  if (config_.weakness == Weakness::kSkipWriteCheck && step.table->access == KvAccess::kWrite) {
    aborts.erase(
        std::remove_if(aborts.begin(), aborts.end(),
                       [&](const StepAbort& a) { return step.request(a.packed).spec.id % 2 == 0; }),
        aborts.end());
  }
  if (config_.weakness == Weakness::kRefuseAfterFault && faults_ &&
      faults_->fired_corrupting() > 0) {
    std::vector<StepAbort> every;
    size_t next = 0;
    for (size_t b = 0; b < step.table->rows.size(); ++b) {
      if (!step.runs(b)) continue;
      if (next < aborts.size() && aborts[next].packed == b) {
        every.push_back(aborts[next++]);
        continue;
      }
      StepAbort refused;
      refused.packed = b;
      refused.abort.row = static_cast<int32_t>(b);
      refused.abort.reason = TagCheckCode::kStaleTag;
      refused.message = "refused: the check was weakened to refuse every row once a bug fired";
      every.push_back(std::move(refused));
    }
    aborts = std::move(every);
  }
}

std::vector<std::vector<PageGrant>> Server::BooksFollowTags(size_t instance,
                                                            const StepAccess& step) {
  Instance& p = *instances_[instance];
  const PagePool& pages = p.scheduler.pool();
  std::vector<std::vector<PageGrant>> books;
  for (size_t b = 0; b < step.table->rows.size(); ++b) {
    std::vector<PageGrant>& recorded = p.scheduler.mutable_request(step.row(b).slot).recorded;
    books.push_back(recorded);
    for (PageGrant& grant : recorded) {
      if (grant.page >= 0 && grant.page < pages.num_pages()) grant = pages.CurrentGrant(grant.page);
    }
  }
  return books;
}

void Server::RestoreBooks(size_t instance, const StepAccess& step,
                          std::vector<std::vector<PageGrant>> books) {
  Instance& p = *instances_[instance];
  for (size_t b = 0; b < step.table->rows.size(); ++b) {
    p.scheduler.mutable_request(step.row(b).slot).recorded = std::move(books[b]);
  }
}

void Server::ChangeLaunchedTable(size_t instance, const StepAccess& step) {
  Instance& p = *instances_[instance];
  const int32_t num_pages = p.scheduler.pool().num_pages();
  const int32_t page_size = p.scheduler.config().page_size;
  StepTable& table = p.table;
  if (num_pages < 2) return;
  for (size_t b = 0; b < table.rows.size(); ++b) {
    if (!step.runs(b)) continue;
    const int32_t last = (table.seq_lens[b] - 1) / page_size;
    if (last < 0 || last >= table.stride) return;
    int32_t& entry = table.table[b * static_cast<size_t>(table.stride) + static_cast<size_t>(last)];
    entry = entry < 0 ? 0 : (entry + 1) % num_pages;
    return;
  }
}

}  // namespace kvsim::sim
