// Names in run reports.
#include "sim/report/run_report.h"

namespace kvsim::sim {

const char* FindingKindName(Finding::Kind kind) {
  switch (kind) {
    case Finding::Kind::kSilentWrite:
      return "silent write";
    case Finding::Kind::kSilentRead:
      return "silent read";
    case Finding::Kind::kFalseAlarm:
      return "false alarm";
    case Finding::Kind::kOutputOutsideBound:
      return "output outside bound";
    case Finding::Kind::kRewriteDiffers:
      return "rewrite differs";
    case Finding::Kind::kOverRefusal:
      return "over-refusal";
  }
  return "unknown";
}

}  // namespace kvsim::sim
