// The run's value of each figure a scenario may state.
#include "sim/scenario/figure_check.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/check.h"

namespace kvsim::sim {
namespace {

struct RequestTotals {
  int64_t count = 0;
  double prompt = 0;
  double output = 0;
  int64_t max_prompt = 0;
  int64_t max_output = 0;
  SimNs last_arrival_ns = 0;
};

RequestTotals Totals(const RunReport& r) {
  RequestTotals t;
  for (const RequestRecord& request : r.requests) {
    ++t.count;
    t.prompt += request.prompt_tokens;
    t.output += request.output_tokens;
    t.max_prompt = std::max<int64_t>(t.max_prompt, request.prompt_tokens);
    t.max_output = std::max<int64_t>(t.max_output, request.output_tokens);
    t.last_arrival_ns = std::max(t.last_arrival_ns, request.arrival_ns);
  }
  return t;
}

double Value(const std::string& name, const PreparedScenario& prepared, const RunReport& r,
             const RequestTotals& t) {
  const auto per = [](double total, double count) { return count > 0 ? total / count : 0.0; };
  const model::PlanResult& plan = prepared.instances.front().plan;
  if (name == "requests") return static_cast<double>(r.arrived);
  if (name == "arrival_span_s") return NsToSeconds(t.last_arrival_ns);
  if (name == "mean_prompt_tokens") return per(t.prompt, static_cast<double>(t.count));
  if (name == "mean_output_tokens") return per(t.output, static_cast<double>(t.count));
  if (name == "max_prompt_tokens") return static_cast<double>(t.max_prompt);
  if (name == "max_output_tokens") return static_cast<double>(t.max_output);
  if (name == "arriving_prompt_tokens_per_s") return per(t.prompt, NsToSeconds(t.last_arrival_ns));
  if (name == "simulated_s") return NsToSeconds(r.end_ns);
  if (name == "ttft_p50_s") return NsToSeconds(r.ttft.p50_ns);
  if (name == "ttft_p99_s") return NsToSeconds(r.ttft.p99_ns);
  if (name == "tpot_p50_ms") return static_cast<double>(r.tpot.p50_ns) * 1e-6;
  if (name == "itl_p50_ms") return static_cast<double>(r.itl.p50_ns) * 1e-6;
  if (name == "e2e_p50_s") return NsToSeconds(r.e2e.p50_ns);
  if (name == "gaps_with_prefill_percent") {
    const TokenGapSplit& g = r.gaps;
    return 100.0 * per(static_cast<double>(g.with_prefill),
                       static_cast<double>(g.decode_only + g.with_prefill + g.waited));
  }
  if (name == "decode_only_step_ms") {
    return per(static_cast<double>(r.gaps.modal_ns) * 1e-6,
               static_cast<double>(r.gaps.modal_steps));
  }
  if (name == "peak_running") return r.peak_running;
  if (name == "preemptions") return static_cast<double>(r.preemptions);
  if (name == "rejected") return static_cast<double>(r.rejected);
  if (name == "prefix_hit_percent") {
    return 100.0 * per(static_cast<double>(r.cached_tokens), static_cast<double>(r.prompt_tokens));
  }
  if (name == "output_tokens_per_s") return r.output_tokens_per_s();
  if (name == "pool_pages") return r.pool_pages;
  if (name == "plan_requests_fit") return static_cast<double>(plan.capacity.max_requests_total);
  if (name == "plan_kv_tokens") return static_cast<double>(plan.capacity.tokens_total);
  if (name == "plan_prefill_tokens_per_s") return plan.prefill.tokens_per_s;
  KVSIM_CHECK(false) << "a stated figure with no value: " << name;
  return 0;
}

}  // namespace

std::vector<FigureCheck> CheckStatedFigures(const Scenario& scenario,
                                            const PreparedScenario& prepared,
                                            const RunReport& report) {
  const RequestTotals totals = Totals(report);
  std::vector<FigureCheck> checks;
  for (const StatedFigure& figure : scenario.figures) {
    FigureCheck check;
    check.figure = figure;
    check.actual = Value(figure.name, prepared, report, totals);
    check.holds = std::fabs(check.actual - figure.value) <= figure.within;
    checks.push_back(check);
  }
  return checks;
}

}  // namespace kvsim::sim
