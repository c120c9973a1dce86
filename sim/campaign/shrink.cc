// Shrinking a surprising case's scenario.
#include "sim/campaign/shrink.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace kvsim::sim {

Scenario ShrinkCase(const Scenario& scenario, SurpriseKind kind,
                    const std::function<SurpriseKind(const Scenario&)>& still,
                    std::string& summary) {
  Scenario best = scenario;
  std::vector<std::string> removed;
  // Each reduction returns false when it cannot apply any more.
  using Reduction = std::function<bool(Scenario&)>;
  std::vector<std::pair<std::string, Reduction>> reductions;
  reductions.push_back({"requests", [](Scenario& s) {
                          WorkloadSpec& w = s.server.workload;
                          if (w.requests <= 1) return false;
                          w.requests = std::max<int64_t>(1, w.requests / 2);
                          w.clients =
                              static_cast<int32_t>(std::min<int64_t>(w.clients, w.requests));
                          return true;
                        }});
  reductions.push_back({"clients", [](Scenario& s) {
                          WorkloadSpec& w = s.server.workload;
                          if (w.clients <= 1) return false;
                          w.clients /= 2;
                          return true;
                        }});
  for (int site = 0; site < kFaultSites; ++site) {
    reductions.push_back(
        {std::string("fault ") + FaultSiteName(static_cast<FaultSite>(site)), [site](Scenario& s) {
           int64_t& ppm = s.server.faults.ppm[static_cast<size_t>(site)];
           if (ppm == 0) return false;
           ppm = 0;
           return true;
         }});
  }
  reductions.push_back({"cancellations", [](Scenario& s) {
                          CancelSpec& c = s.server.workload.cancel;
                          if (c.probability_ppm == 0) return false;
                          c = CancelSpec{};
                          return true;
                        }});
  reductions.push_back({"shared prefixes", [](Scenario& s) {
                          SharedPrefixSpec& p = s.server.workload.shared_prefix;
                          if (p.groups == 0) return false;
                          p = SharedPrefixSpec{};
                          return true;
                        }});
  reductions.push_back({"output tokens", [](Scenario& s) {
                          WorkloadSpec& w = s.server.workload;
                          if (w.output_tokens.max <= 1) return false;
                          w.output_tokens.max = std::max(1, w.output_tokens.max / 2);
                          w.output_tokens.min = std::min(w.output_tokens.min, w.output_tokens.max);
                          w.max_new_tokens = w.output_tokens.max;
                          return true;
                        }});
  reductions.push_back({"prompt tokens", [](Scenario& s) {
                          WorkloadSpec& w = s.server.workload;
                          if (w.prompt_tokens.max <= 1) return false;
                          w.prompt_tokens.max = std::max(1, w.prompt_tokens.max / 2);
                          w.prompt_tokens.min = std::min(w.prompt_tokens.min, w.prompt_tokens.max);
                          return true;
                        }});
  reductions.push_back({"pages", [](Scenario& s) {
                          if (s.disaggregation) return false;
                          if (s.pool_pages <= 2) return false;
                          s.pool_pages = s.pool_pages * 3 / 4;
                          s.server.scheduler.watermark_pages =
                              std::min(s.server.scheduler.watermark_pages, s.pool_pages - 1);
                          return true;
                        }});
  reductions.push_back({"running requests", [](Scenario& s) {
                          SchedulerConfig& c = s.server.scheduler;
                          if (c.max_running <= 1) return false;
                          c.max_running /= 2;
                          return true;
                        }});
  // Greedy passes until none of the reductions keeps the surprise, with a bound on the trials.
  int trials = 0;
  bool progress = true;
  while (progress && trials < 200) {
    progress = false;
    for (const auto& [name, reduce] : reductions) {
      Scenario candidate = best;
      if (!reduce(candidate)) continue;
      ++trials;
      if (still(candidate) != kind) continue;
      best = std::move(candidate);
      progress = true;
      if (std::find(removed.begin(), removed.end(), name) == removed.end()) {
        removed.push_back(name);
      }
    }
  }
  summary = "shrunk in " + std::to_string(trials) + " trials";
  if (!removed.empty()) {
    summary += "; reduced:";
    for (size_t i = 0; i < removed.size(); ++i) summary += (i == 0 ? " " : ", ") + removed[i];
  }
  return best;
}

}  // namespace kvsim::sim
