// The names a scenario's stated figures may use, and their parsing.
#include "sim/scenario/stated_figure.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

namespace kvsim::sim {

const std::vector<StatedFigureName> kStatedFigureNames = {
    {"requests", "requests that arrived"},
    {"arrival_span_s", "seconds from the start to the last arrival"},
    {"mean_prompt_tokens", "mean prompt of the requests that arrived"},
    {"mean_output_tokens", "mean output the requests that arrived would generate"},
    {"max_prompt_tokens", "longest prompt"},
    {"max_output_tokens", "longest output"},
    {"arriving_prompt_tokens_per_s", "prompt tokens that arrived per second of the arrival span"},
    {"simulated_s", "simulated seconds until the run stopped"},
    {"ttft_p50_s", "time to first token, median, seconds"},
    {"ttft_p99_s", "time to first token, 99th percentile, seconds"},
    {"tpot_p50_ms", "time per output token, median, milliseconds"},
    {"itl_p50_ms", "inter-token latency, median, milliseconds"},
    {"e2e_p50_s", "end to end latency, median, seconds"},
    {"gaps_with_prefill_percent",
     "token gaps ended by a step that also ran prompt chunks, percent of all gaps"},
    {"decode_only_step_ms",
     "mean decode-only step at its most common batch (plan's ms/tok at that concurrency)"},
    {"peak_running", "most requests running at once"},
    {"preemptions", "preemptions"},
    {"rejected", "requests rejected"},
    {"prefix_hit_percent", "prompt tokens served from the prefix cache, percent of admitted"},
    {"output_tokens_per_s", "output tokens per simulated second"},
    {"pool_pages", "pages in all pools"},
    {"plan_requests_fit", "requests of the deployment's context that `kvsim plan` fits at once"},
    {"plan_kv_tokens", "KV tokens of all pools as `kvsim plan` sizes them"},
    {"plan_prefill_tokens_per_s", "`kvsim plan`'s prefill tokens per second"},
};

double RoundingHalfUnit(const std::string& text) {
  const size_t point = text.find('.');
  const size_t decimals = point == std::string::npos ? 0 : text.size() - point - 1;
  return 0.5 * std::pow(10.0, -static_cast<double>(decimals));
}

namespace {

bool KnownName(const std::string& name) {
  for (const StatedFigureName& known : kStatedFigureNames) {
    if (name == known.name) return true;
  }
  return false;
}

std::string AllowedNames() {
  std::string names;
  for (const StatedFigureName& known : kStatedFigureNames) {
    names += (names.empty() ? "" : ", ") + std::string(known.name);
  }
  return names;
}

// A plain decimal: digits, at most one point, an optional leading minus; what rounding means.
bool PlainDecimal(const std::string& text) {
  size_t i = text.size() > 0 && text[0] == '-' ? 1 : 0;
  bool digit = false;
  bool point = false;
  for (; i < text.size(); ++i) {
    if (text[i] >= '0' && text[i] <= '9') {
      digit = true;
    } else if (text[i] == '.' && !point) {
      point = true;
    } else {
      return false;
    }
  }
  return digit && text.back() != '.';
}

}  // namespace

Result<std::vector<StatedFigure>> ParseStatedFigures(const model::YamlMap& map) {
  std::vector<StatedFigure> figures;
  for (const std::string& name : map.Keys()) {
    if (!KnownName(name)) {
      return map.KeyError(name, "unknown figure; allowed: " + AllowedNames());
    }
    StatedFigure figure;
    figure.name = name;
    Result<model::YamlMap> about = map.Map(name);
    if (about.ok()) {
      KVSIM_RETURN_IF_ERROR(about->CheckKnownKeys({"about", "within"}));
      KVSIM_ASSIGN_OR_RETURN(figure.value, about->Double("about", -1e18, 1e18));
      KVSIM_ASSIGN_OR_RETURN(figure.within, about->Double("within", 0, 1e18));
      KVSIM_ASSIGN_OR_RETURN(figure.text, about->String("about"));
      figure.text = "about " + figure.text;
    } else {
      KVSIM_ASSIGN_OR_RETURN(figure.text, map.String(name));
      if (!PlainDecimal(figure.text)) {
        return map.Error(name, fmt::format("'{}' is not a plain decimal number; write the figure "
                                           "as the comment states it (31.2), or {{about: N, "
                                           "within: W}}",
                                           figure.text));
      }
      figure.value = std::strtod(figure.text.c_str(), nullptr);
      figure.within = RoundingHalfUnit(figure.text);
    }
    figures.push_back(figure);
  }
  return figures;
}

}  // namespace kvsim::sim
