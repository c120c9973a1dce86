// The planted bugs the server itself commits on a step's rows (a read past the length, a skipped
// write), and the zombies such bugs leave: ended requests whose write still lands.
#include "sim/server/server.h"

namespace kvsim::sim {

void Server::PlantRowBugs(size_t instance) {
  if (!faults_) return;
  const bool past = faults_->On(FaultSite::kReadPastLength);
  const bool skip = faults_->On(FaultSite::kCommittedAheadOfWrites);
  if (!past && !skip) return;
  Instance& p = *instances_[instance];
  const int32_t page_size = p.scheduler.config().page_size;
  for (ScheduledRow& row : p.formed.rows) {
    if (row.tokens != 1) continue;  // decode rows
    const int32_t end = row.first_token + 1;
    const int64_t id = p.scheduler.request(row.slot).spec.id;
    const std::vector<int32_t>& block_row = p.scheduler.request(row.slot).block_row;
    const size_t logical = static_cast<size_t>(row.first_token / page_size);
    const std::vector<int32_t> page = {logical < block_row.size() ? block_row[logical] : -1};
    if (past && end % page_size != 0 && faults_->Fires(FaultSite::kReadPastLength)) {
      row.read_end = (end / page_size + 1) * page_size;
      faults_->Changed(FaultSite::kReadPastLength, {static_cast<int32_t>(instance), id, page});
    }
    if (skip && faults_->Fires(FaultSite::kCommittedAheadOfWrites)) {
      row.write_skipped = true;
      faults_->Changed(FaultSite::kCommittedAheadOfWrites,
                       {static_cast<int32_t>(instance), id, page});
    }
  }
}

Status Server::LandGhostWrites(size_t instance) {
  Instance& p = *instances_[instance];
  if (p.ghost_writes.empty()) return Status::Ok();
  const std::vector<ScheduledRow> rows = std::move(p.ghost_writes);
  p.ghost_writes.clear();
  std::vector<bool> proceed(rows.size(), true);
  KVSIM_RETURN_IF_ERROR(RunAccess(instance, KvAccess::kWrite, rows, proceed));
  for (const ScheduledRow& row : rows) RetireLingering(instance, row.slot);
  return Status::Ok();
}

void Server::RetireLingering(size_t instance, int32_t slot) {
  Instance& p = *instances_[instance];
  if (p.auditor != nullptr) p.auditor->Forget(slot, p.scheduler.request(slot).spec.id);
  p.scheduler.Retire(slot);
}

}  // namespace kvsim::sim
