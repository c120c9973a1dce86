// The --need search: a grid over the deployment fields a planner chooses, each point planned at
// the needed concurrency and checked against the latency targets.
#include "cli/plan_need.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "base/kv_format.h"
#include "cli/text_table.h"
#include "model/number_text.h"

namespace kvsim::cli {
namespace {

bool Given(const model::PlanSettings& s, const char* field) {
  return std::find(s.given.begin(), s.given.end(), field) != s.given.end();
}

std::string Joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

template <typename T>
std::vector<std::string> Texts(const std::vector<T>& values) {
  std::vector<std::string> out;
  for (const T& v : values) out.push_back(fmt::format("{}", v));
  return out;
}

// The reason class of a failure, for counting: the text up to its first ':' or '('.
std::string ReasonKind(const std::string& failure) {
  return failure.substr(0, std::min(failure.find(':'), failure.find(" (")));
}

// Why `r` does not meet `need`, or "" when it does.
std::string Failure(const model::PlanResult& r, const Need& need) {
  if (!r.planned()) return r.shortfall;
  const model::DecodeEstimate& e = r.decode.front();
  if (!e.fits) {
    return fmt::format("the cache holds fewer requests: {} of {}", r.capacity.max_requests_total,
                       need.concurrency);
  }
  if (e.ms_per_token > need.ms_per_token_max) {
    return fmt::format("decode too slow: {:.1f} ms per token", e.ms_per_token);
  }
  const double ttft_ms = r.prefill.step.total_s * 1e3;
  if (need.ttft_ms_max > 0 && ttft_ms > need.ttft_ms_max) {
    return fmt::format("first token too late: {:.0f} ms", ttft_ms);
  }
  return "";
}

std::string Deployment(const model::PlanResult& r) {
  const model::Deployment& d = r.settings.deployment;
  return fmt::format("{} x {} tp {}{}, {} cache, {} weights", d.gpus, r.settings.gpu, d.tp,
                     d.ep > 1 ? fmt::format(" ep {}", d.ep) : std::string(),
                     KvFormatName(d.kv_format), d.weight_variant);
}

// How far `c` is from meeting the need, within its reason: lower is nearer. The slowest decode,
// the latest first token and the smallest cache are the farthest; other reasons are all equal.
double Miss(const NeedCandidate& c) {
  if (!c.result.planned()) return 0;
  const model::DecodeEstimate& e = c.result.decode.front();
  if (!e.fits) return -static_cast<double>(c.result.capacity.max_requests_total);
  if (ReasonKind(c.failure) == "decode too slow") return e.ms_per_token;
  return c.result.prefill.step.total_s;
}

}  // namespace

Result<Need> ParseNeed(const std::string& text) {
  Need need;
  std::vector<std::string> seen;
  size_t start = 0;
  const std::string usage =
      "--need must be concurrency=N,ms-per-token=T[,ttft-ms=F] (e.g. concurrency=64,"
      "ms-per-token=30)";
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    start = comma + 1;
    const size_t equals = item.find('=');
    if (equals == std::string::npos) return InvalidArgumentError(usage);
    const std::string key = item.substr(0, equals);
    const std::string value = item.substr(equals + 1);
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      return InvalidArgumentError(fmt::format("--need gives {} twice; give it once", key));
    }
    seen.push_back(key);
    if (key == "concurrency") {
      const std::optional<int64_t> n = model::ParseInteger(value);
      if (!n || *n < 1 || *n > 1048576) {
        return InvalidArgumentError(fmt::format(
            "--need concurrency '{}' is not allowed; allowed: an integer 1 to 1048576", value));
      }
      need.concurrency = *n;
    } else if (key == "ms-per-token" || key == "ttft-ms") {
      const std::optional<double> ms = model::ParseFinite(value);
      if (!ms || *ms <= 0 || *ms > 1e7) {
        return InvalidArgumentError(fmt::format(
            "--need {} '{}' is not allowed; allowed: milliseconds above 0", key, value));
      }
      (key == "ttft-ms" ? need.ttft_ms_max : need.ms_per_token_max) = *ms;
    } else {
      return InvalidArgumentError(fmt::format(
          "--need key '{}' is not known; allowed: concurrency, ms-per-token, ttft-ms", key));
    }
  }
  if (need.concurrency == 0 || need.ms_per_token_max == 0) return InvalidArgumentError(usage);
  return need;
}

Result<NeedReport> SolveNeed(const model::Catalog& catalog, const model::StepTimeParams& params,
                             const model::PlanSettings& base, const Need& need) {
  KVSIM_ASSIGN_OR_RETURN(const model::ModelSpec spec, catalog.LoadModel(base.model));
  const model::Deployment& d = base.deployment;
  std::vector<std::string> gpus = {base.gpu};
  if (!Given(base, "gpu")) gpus = catalog.GpuNames();
  std::vector<int> counts = {d.gpus};
  if (!Given(base, "gpus")) counts.assign(std::begin(kNeedGpuCounts), std::end(kNeedGpuCounts));
  std::vector<int> tps = {d.tp};
  if (!Given(base, "tp")) tps.assign(std::begin(kNeedTpSizes), std::end(kNeedTpSizes));
  std::vector<std::string> kvs = {KvFormatName(d.kv_format)};
  if (!Given(base, "kv-format")) kvs = {"bf16", "fp8_e4m3"};
  std::vector<std::string> variants = {d.weight_variant};
  if (!Given(base, "weights")) {
    variants.clear();
    for (const model::WeightVariant& v : spec.variants) variants.push_back(v.name);
  }
  // Expert parallelism: whole experts per GPU (ep = tp) beside split experts (ep 1), for models
  // with routed experts, unless --ep is given.
  const bool search_ep = spec.moe.has_value() && !Given(base, "ep");
  NeedReport report;
  report.searched = {"gpu " + Joined(gpus), "gpus " + Joined(Texts(counts)),
                     "tp " + Joined(Texts(tps)) + " (dividing gpus)", "kv-format " + Joined(kvs),
                     "weights " + Joined(variants)};
  if (search_ep) report.searched.push_back("ep 1, tp");
  for (const std::string& gpu : gpus) {
    KVSIM_ASSIGN_OR_RETURN(const model::GpuSpec gpu_spec, catalog.LoadGpu(gpu));
    for (int count : counts) {
      for (int tp : tps) {
        if (tp > count || count % tp != 0) continue;
        std::vector<int> eps = {d.ep};
        if (search_ep) eps = tp > 1 ? std::vector<int>{1, tp} : std::vector<int>{1};
        for (const int ep : eps) {
          if (ep != 1 && ep != tp) continue;
          for (const std::string& kv : kvs) {
            for (const std::string& variant : variants) {
              model::PlanSettings s = base;
              s.gpu = gpu;
              s.deployment.gpus = count;
              s.deployment.tp = tp;
              s.deployment.ep = ep;
              KVSIM_ASSIGN_OR_RETURN(s.deployment.kv_format, ParseKvFormat(kv));
              s.deployment.weight_variant = variant;
              KVSIM_ASSIGN_OR_RETURN(
                  model::PlanResult r,
                  model::PlanOrShortfall(s, catalog, params, {need.concurrency}, nullptr));
              NeedCandidate c;
              const double price = s.deployment.usd_per_gpu_hour >= 0
                                       ? s.deployment.usd_per_gpu_hour
                                       : gpu_spec.usd_per_gpu_hour;
              c.usd_per_hour = price * count;
              c.failure = Failure(r, need);
              c.result = std::move(r);
              (c.failure.empty() ? report.meeting : report.failing).push_back(std::move(c));
            }
          }
        }
      }
    }
  }
  std::stable_sort(report.meeting.begin(), report.meeting.end(),
                   [](const NeedCandidate& a, const NeedCandidate& b) {
                     if (a.usd_per_hour != b.usd_per_hour) return a.usd_per_hour < b.usd_per_hour;
                     return a.result.decode.front().ms_per_token <
                            b.result.decode.front().ms_per_token;
                   });
  return report;
}

void PrintNeed(std::ostream& out, const Need& need, const model::PlanSettings& base,
               const NeedReport& report, size_t shown) {
  const model::Deployment& d = base.deployment;
  out << fmt::format("need: {} concurrent requests of {} tokens", Grouped(need.concurrency),
                     Grouped(d.context_tokens));
  if (d.output_tokens > 0) out << fmt::format(" ({} output)", Grouped(d.output_tokens));
  out << fmt::format(", at most {:g} ms per output token", need.ms_per_token_max);
  if (need.ttft_ms_max > 0) {
    out << fmt::format(", first token within {:g} ms (one prompt's prefill on an idle pool)",
                       need.ttft_ms_max);
  }
  const size_t total = report.meeting.size() + report.failing.size();
  out << fmt::format("\nsearched {} deployments of {}: {}\n", total, base.model,
                     Joined(report.searched));
  if (!report.meeting.empty()) {
    out << fmt::format("{} meet it; the cheapest:\n", report.meeting.size());
    TextTable table({"gpu", "gpus", "tp", "ep", "kv-format", "weights", "ms/tok", "tok/s",
                     "TTFT ms", "USD/h", "USD/Mtok"},
                    {TextTable::Align::kLeft, TextTable::Align::kRight, TextTable::Align::kRight,
                     TextTable::Align::kRight, TextTable::Align::kLeft, TextTable::Align::kLeft,
                     TextTable::Align::kRight, TextTable::Align::kRight, TextTable::Align::kRight,
                     TextTable::Align::kRight, TextTable::Align::kRight});
    for (size_t i = 0; i < report.meeting.size() && i < shown; ++i) {
      const model::PlanResult& r = report.meeting[i].result;
      const model::DecodeEstimate& e = r.decode.front();
      table.AddRow(
          {r.gpu.name, std::to_string(r.settings.deployment.gpus),
           std::to_string(r.settings.deployment.tp), std::to_string(r.settings.deployment.ep),
           KvFormatName(r.settings.deployment.kv_format), r.weight_variant,
           fmt::format("{:.1f}", e.ms_per_token), Grouped(static_cast<int64_t>(e.tokens_per_s)),
           fmt::format("{:.0f}", r.prefill.step.total_s * 1e3),
           fmt::format("{:.2f}", report.meeting[i].usd_per_hour),
           fmt::format("{:.2f}", e.usd_per_million_tokens)});
    }
    table.Print(out);
    // The question is often "how many of which GPU": the cheapest that meets it on each kind.
    std::vector<std::string> kinds;
    for (const NeedCandidate& c : report.meeting) {
      const std::string& gpu = c.result.settings.gpu;
      if (std::find(kinds.begin(), kinds.end(), gpu) != kinds.end()) continue;
      kinds.push_back(gpu);
      out << fmt::format("  cheapest on {}: {} ({:.2f} USD/h)\n", gpu, Deployment(c.result),
                         c.usd_per_hour);
    }
  } else {
    out << "none meets it\n";
  }
  if (!report.failing.empty()) {
    // Each reason once, with how many failed for it and the nearest miss (Miss) as example.
    std::map<std::string, std::pair<int, const NeedCandidate*>> reasons;
    for (const NeedCandidate& c : report.failing) {
      auto& [count, example] = reasons[ReasonKind(c.failure)];
      ++count;
      if (example == nullptr || Miss(c) < Miss(*example)) example = &c;
    }
    out << "why the others do not:\n";
    for (const auto& [reason, entry] : reasons) {
      const std::string& failure = entry.second->failure;
      const std::string detail =
          failure.size() > reason.size() + 2 ? failure.substr(reason.size() + 2) : failure;
      out << fmt::format("  {:>4}  {} (closest: {}: {})\n", entry.first, reason,
                         Deployment(entry.second->result), detail);
    }
  }
  if (total > 0) {
    const NeedCandidate& any = report.meeting.empty() ? report.failing[0] : report.meeting[0];
    out << "step times fitted to: " << any.result.step_time_source << "\n";
  }
}

namespace {

nlohmann::json CandidateJson(const NeedCandidate& c) {
  const model::PlanResult& r = c.result;
  const model::Deployment& d = r.settings.deployment;
  nlohmann::json j = {{"gpu", r.settings.gpu},
                      {"gpus", d.gpus},
                      {"tp", d.tp},
                      {"ep", d.ep},
                      {"kv_format", KvFormatName(d.kv_format)},
                      {"weights", d.weight_variant},
                      {"usd_per_hour", c.usd_per_hour}};
  if (r.planned()) {
    const model::DecodeEstimate& e = r.decode.front();
    j["fits"] = e.fits;
    j["max_requests"] = r.capacity.max_requests_total;
    j["ms_per_token"] = e.ms_per_token;
    j["tokens_per_s"] = e.tokens_per_s;
    j["ttft_ms"] = r.prefill.step.total_s * 1e3;
    j["usd_per_million_tokens"] = e.usd_per_million_tokens;
  }
  if (!c.failure.empty()) j["failure"] = c.failure;
  return j;
}

}  // namespace

nlohmann::json NeedJson(const Need& need, const model::PlanSettings& base,
                        const NeedReport& report) {
  nlohmann::json j;
  j["need"] = {{"model", base.model},
               {"concurrency", need.concurrency},
               {"context", base.deployment.context_tokens},
               {"output", base.deployment.output_tokens},
               {"ms_per_token_max", need.ms_per_token_max}};
  if (need.ttft_ms_max > 0) j["need"]["ttft_ms_max"] = need.ttft_ms_max;
  j["searched"] = report.searched;
  j["meeting"] = nlohmann::json::array();
  for (const NeedCandidate& c : report.meeting) j["meeting"].push_back(CandidateJson(c));
  j["failing"] = nlohmann::json::array();
  for (const NeedCandidate& c : report.failing) j["failing"].push_back(CandidateJson(c));
  const NeedCandidate* any = !report.meeting.empty()   ? &report.meeting[0]
                             : !report.failing.empty() ? &report.failing[0]
                                                       : nullptr;
  if (any != nullptr) j["step_times_fitted_to"] = any->result.step_time_source;
  return j;
}

}  // namespace kvsim::cli
