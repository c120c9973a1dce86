// kvsim plan --need: the cheapest deployments that serve a number of concurrent requests at a
// latency target, and why the others do not.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
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
  // How far it is from the need, as one ratio: the largest of needed / available memory and
  // achieved / required latency. Above 1 it fails, and the smaller the nearer; at most 1 it meets
  // the need. Infinite when nothing measures it (a deployment that does not suit the model).
  double shortfall = 0;
};

// The search's outcome: the deployments that meet the need, cheapest per hour first (then the
// fastest), and those that do not, in search order. Where the GPU count is searched, each
// deployment (gpu, tp, ep, KV format, weights) meets it at its fewest GPUs only: more cost more.
struct NeedReport {
  std::vector<std::string> searched;  // "gpu h100-sxm, h200-sxm", "gpus 1..64 (...)", ...
  std::vector<NeedCandidate> meeting;
  std::vector<NeedCandidate> failing;
  // Where the GPU count was searched (gpus not given), its limit (--max-gpus); 0 when gpus was
  // given and only that count was planned.
  int max_gpus = 0;
  // The deployments still short of the need at their largest count within max_gpus, where more
  // GPUs might meet it, and the least that the next count of any of them would cost per hour.
  int short_at_max_gpus = 0;
  double usd_per_hour_beyond_max_gpus = 0;
};

// The tensor-parallel sizes the search tries: within one 8-GPU NVLink domain. Each is tried at
// every GPU count that is a multiple of it, up to the limit (--max-gpus, default 64, at most
// 1024).
inline constexpr int kNeedTpSizes[] = {1, 2, 4, 8};
inline constexpr int kNeedMaxGpusDefault = 64;
inline constexpr int kNeedMaxGpusLimit = 1024;

// The search's largest GPU count: the default when `text` (--max-gpus) is not given, else an
// integer 1 to 1024. Refused (InvalidArgument, naming the option) beside a given gpus, which it
// would not change.
Result<int> MaxGpusFor(const std::optional<std::string>& text, const model::PlanSettings& base);

// Plans every combination of GPU kind, tensor parallelism, expert parallelism (for models with
// routed experts), KV dtype (bf16, fp8_e4m3), weight variant of `base`'s model and GPU count (every
// multiple of tp up to `max_gpus`), except the fields `base` sets explicitly (base.given), which
// stay as set, and sorts them by `need`. A deployment's GPU count grows only while more GPUs may
// still be the cheapest way to meet the need (see plan_need.cc). Errors: unknown names, a bad
// kernel table, a given tp above `max_gpus`.
Result<NeedReport> SolveNeed(const model::Catalog& catalog, const model::StepTimeParams& params,
                             const model::PlanSettings& base, const Need& need,
                             int max_gpus = kNeedMaxGpusDefault);

// The need, what was searched, the `shown` cheapest deployments that meet it, the failures
// counted by reason, each with its closest miss (the smallest shortfall), the nearest miss of all
// when none meets it, and where the GPU count stopped and whether a larger --max-gpus could help.
void PrintNeed(std::ostream& out, const Need& need, const model::PlanSettings& base,
               const NeedReport& report, size_t shown);

// The same as JSON: the need, what was searched and up to which GPU count, every deployment that
// meets it (cheapest first) and every one that does not with its reason and shortfall, and where
// the step times come from.
nlohmann::json NeedJson(const Need& need, const model::PlanSettings& base,
                        const NeedReport& report);

}  // namespace kvsim::cli
