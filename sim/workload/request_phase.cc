// Request phase names.
#include "sim/workload/request_phase.h"

namespace kvsim::sim {

const char* RequestPhaseName(RequestPhase phase) {
  switch (phase) {
    case RequestPhase::kWaiting:
      return "waiting";
    case RequestPhase::kRunning:
      return "running";
    case RequestPhase::kFinished:
      return "finished";
    case RequestPhase::kCancelled:
      return "cancelled";
    case RequestPhase::kRejected:
      return "rejected";
    case RequestPhase::kAborted:
      return "aborted";
    case RequestPhase::kTransferring:
      return "transferring";
    case RequestPhase::kReceiving:
      return "receiving";
    case RequestPhase::kTransferred:
      return "transferred";
    case RequestPhase::kStoring:
      return "storing";
  }
  return "unknown";
}

}  // namespace kvsim::sim
