// RequestPhase: where a request is in its life, from waiting to its end (or its hand-over to
// another pool, or the copy of its KV out to the store). The scheduler moves requests through the
// phases; reports record the phase each request ended in.
#pragma once

#include <cstdint>

namespace kvsim::sim {

enum class RequestPhase : uint8_t {
  kWaiting,
  kRunning,
  kFinished,
  kCancelled,
  kRejected,  // could never fit; never ran
  kAborted,   // failed an integrity check
  // Prefill/decode disaggregation:
  kTransferring,  // prefill instance: prefilled, its pages held until the transfer has read them
  kReceiving,     // decode instance: pages granted, the transfer writing the prompt's KV into them
  kTransferred,  // prefill instance: handed over to the decode instance (not an end of the request)
  // Finished, its pages held until the asynchronous copy of its KV out to the KV store has read
  // them (the server's `kv_store`); the request's end is recorded when it enters this phase.
  kStoring,
};
// "waiting", "running", "finished", "cancelled", "rejected", "aborted", "transferring",
// "receiving", "transferred", "storing".
const char* RequestPhaseName(RequestPhase phase);

}  // namespace kvsim::sim
