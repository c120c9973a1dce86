// kvsim plan --need: the cheapest deployments that serve a number of concurrent requests at a
// latency target, and why the others do not.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/catalog.h"
#include "model/plan.h"

namespace kvsim::cli {

// What a deployment must serve: `concurrency` requests at once (of the plan's --context and
// --output), each decoding at most `ms_per_token_max` between tokens, and optionally its first
// token within `ttft_ms_max` (0: no target) counted as one prompt's prefill on an idle pool.
struct Need {
  int64_t concurrency = 0;
  double ms_per_token_max = 0;
  double ttft_ms_max = 0;
};

// "concurrency=64,ms-per-token=30" or with ",ttft-ms=2000": each key once, concurrency and
// ms-per-token required. Errors name what is allowed (InvalidArgument).
Result<Need> ParseNeed(const std::string& text);

// One deployment the search planned, and why it does not meet the need (empty when it does).
struct NeedCandidate {
  model::PlanResult result;
  double usd_per_hour = 0;  // all its GPUs
  std::string failure;
};

// The search's outcome: the deployments that meet the need, cheapest per hour first (then the
// fastest), and those that do not, in search order.
struct NeedReport {
  std::vector<std::string> searched;  // "gpu h100-sxm, h200-sxm", "gpus 1, 2, 4, 8, 16", ...
  std::vector<NeedCandidate> meeting;
  std::vector<NeedCandidate> failing;
};

// The GPU counts and tensor-parallel sizes the search tries: tp within one 8-GPU NVLink domain.
inline constexpr int kNeedGpuCounts[] = {1, 2, 4, 8, 16};
inline constexpr int kNeedTpSizes[] = {1, 2, 4, 8};

// Plans every combination of GPU kind, GPU count, tensor parallelism, KV dtype (bf16, fp8_e4m3)
// and weight variant of `base`'s model, except the fields `base` sets explicitly (base.given),
// which stay as set, and sorts them by `need`. Errors: unknown names, a bad kernel table.
Result<NeedReport> SolveNeed(const model::Catalog& catalog, const model::StepTimeParams& params,
                             const model::PlanSettings& base, const Need& need);

// The need, what was searched, the `shown` cheapest deployments that meet it, and the failures
// counted by reason, each with the closest miss.
void PrintNeed(std::ostream& out, const Need& need, const model::PlanSettings& base,
               const NeedReport& report, size_t shown);

// The same as JSON: the need, what was searched, every deployment that meets it (cheapest first)
// and every one that does not with its reason, and where the step times come from.
nlohmann::json NeedJson(const Need& need, const model::PlanSettings& base,
                        const NeedReport& report);

}  // namespace kvsim::cli
