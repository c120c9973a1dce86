// The copy of each finished request's KV out to the KV store (ServerConfig::kv_store), and the
// planted bug that frees its pages while the copy is still to read them.
//
// A copy reads the request's pages asynchronously (its own stream, as vLLM's offloading workers
// and SGLang's cache controller run it) and is done only once the last byte is read, so its read is
// checked and judged when it completes. A check when it starts could not catch the bug: every page
// is still the request's then; it is when the copy completes that a freed page may have been
// granted to another request.
#include "sim/server/server.h"

namespace kvsim::sim {
namespace {

// An event's subject for the copy out of `slot` of `instance`: the slot is held until the copy
// ends.
int64_t StoreSubject(size_t instance, int32_t slot) {
  return static_cast<int64_t>(instance) << 32 | static_cast<int64_t>(slot);
}

}  // namespace

Status Server::StartStore(size_t instance, int32_t slot, EventQueue& queue) {
  Instance& p = *instances_[instance];
  const SimRequest& r = p.scheduler.request(slot);
  const int64_t id = r.spec.id;
  const int32_t tokens = r.computed;  // the tokens whose KV is in the cache
  ++report_.stores;
  ++p.stores_in_flight;
  if (config_.weakness == Weakness::kStoreCheckedAtStart) {
    // The weakness: the copy's pages are checked (and read) now, and not when it completes.
    std::vector<ScheduledRow> rows = {{slot, 0, tokens}};
    std::vector<bool> proceed = {true};
    KVSIM_RETURN_IF_ERROR(RunAccess(instance, KvAccess::kRead, rows, proceed));
  }
  if (faults_ && faults_->Fires(FaultSite::kStoreReadsFreedPages)) {
    // The planted bug: the pages are let go of now, as if the copy had read them; its tables stay
    // for the copy still to read through (a zombie).
    faults_->Changed(FaultSite::kStoreReadsFreedPages,
                     {static_cast<int32_t>(instance), id, r.block_row});
    p.scheduler.Zombify(slot, RequestPhase::kFinished, queue.now());
  }
  const double seconds =
      static_cast<double>(tokens) * p.kv_bytes_per_token / (config_.kv_store->gb_per_s * 1e9);
  MixHash(static_cast<uint64_t>(id) ^ 0x5707e);
  queue.Push(queue.now() + config_.kv_store->latency_ns + SecondsToNs(seconds), kStoreEnd,
             kStoreEnd, StoreSubject(instance, slot));
  return Status::Ok();
}

Status Server::OnStoreEnd(int64_t subject, EventQueue& queue) {
  const size_t instance = static_cast<size_t>(subject >> 32);
  const int32_t slot = static_cast<int32_t>(subject & 0xffffffff);
  Instance& p = *instances_[instance];
  --p.stores_in_flight;
  const SimRequest& r = p.scheduler.request(slot);
  // The copy has read every page now: checked first, then judged by the oracle. A copy a check
  // refuses is discarded; the request had finished, so nothing else ends.
  std::vector<ScheduledRow> rows = {{slot, 0, r.computed}};
  std::vector<bool> proceed = {true};
  const bool checked = config_.weakness != Weakness::kStoreCheckedAtStart;
  KVSIM_RETURN_IF_ERROR(RunAccess(instance, KvAccess::kRead, rows, proceed, checked));
  if (!proceed[0]) ++report_.stores_refused;
  MixHash(static_cast<uint64_t>(r.spec.id) ^ (proceed[0] ? 0x5707d : 0x5707f));
  // A zombie let go of its pages when the copy started; a storing request lets go of them now.
  if (!r.zombie) p.scheduler.ReleaseStored(slot);
  RetireLingering(instance, slot);
  RequestSchedule(instance, queue);
  return Status::Ok();
}

}  // namespace kvsim::sim
