// The --need search: a grid over the deployment fields a planner chooses, each point planned at
// the needed concurrency and checked against the latency targets.
#include "cli/plan_need.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "base/kv_format.h"
#include "base/units.h"
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

// What one GPU's memory must hold for the need: its weights plus the KV cache of its pool's share
// of the requests, each of whole pages; and what it may hold (the budget after the memory
// fraction). A deployment's weights and cache fit exactly when needed <= budget, so the ratio
// measures by one yardstick how far weights that do not fit and a cache too small are from it.
struct MemoryNeed {
  int64_t requests_per_pool = 0;
  double needed_bytes = 0;
  double budget_bytes = 0;
};

MemoryNeed MemoryFor(const model::PlanResult& r, const Need& need) {
  const model::Deployment& d = r.settings.deployment;
  const int64_t pools = d.pool_count();
  const int64_t pages_per_request = (d.context_tokens + d.page_size - 1) / d.page_size;
  MemoryNeed m;
  m.requests_per_pool = (need.concurrency + pools - 1) / pools;
  m.needed_bytes = static_cast<double>(r.capacity.weight_bytes) +
                   static_cast<double>(m.requests_per_pool) *
                       static_cast<double>(pages_per_request * d.page_size) *
                       static_cast<double>(r.kv.total());
  m.budget_bytes = static_cast<double>(r.capacity.budget_bytes);
  return m;
}

// " (123.4 GiB needed per GPU with the weights, 116.5 available)": the figures behind a memory
// shortfall.
std::string MemoryText(const MemoryNeed& m) {
  return fmt::format(" ({:.1f} GiB needed per GPU with the weights, {:.1f} available)",
                     m.needed_bytes / kGiB, m.budget_bytes / kGiB);
}

// Why `r` does not meet `need`, or "" when it does: every quantity that fails, with its figures,
// the first giving the reason it is counted under (ReasonKind).
std::string Failure(const model::PlanResult& r, const Need& need) {
  const MemoryNeed memory = MemoryFor(r, need);
  switch (r.status) {
    case model::PlanStatus::kInvalid:
    case model::PlanStatus::kContextTooLong:
      return r.shortfall;
    case model::PlanStatus::kWeightsDoNotFit:
      return fmt::format("{} (with the cache of {} requests per pool: {:.1f} GiB)", r.shortfall,
                         memory.requests_per_pool, memory.needed_bytes / kGiB);
    case model::PlanStatus::kNoRequestFits:
      return r.shortfall + MemoryText(memory);
    case model::PlanStatus::kPlanned:
      break;
  }
  const model::DecodeEstimate& e = r.decode.front();
  std::vector<std::string> failures;
  if (!e.fits) {
    failures.push_back(fmt::format("the cache holds fewer requests: {} of {}{}",
                                   r.capacity.max_requests_total, need.concurrency,
                                   MemoryText(memory)));
  }
  if (e.ms_per_token > need.ms_per_token_max) {
    failures.push_back(fmt::format("decode too slow: {:.1f} ms per token, need at most {:g}",
                                   e.ms_per_token, need.ms_per_token_max));
  }
  const double ttft_ms = r.prefill.step.total_s * 1e3;
  if (need.ttft_ms_max > 0 && ttft_ms > need.ttft_ms_max) {
    failures.push_back(fmt::format("first token too late: {:.0f} ms, need at most {:g}", ttft_ms,
                                   need.ttft_ms_max));
  }
  std::string out;
  for (const std::string& failure : failures) out += (out.empty() ? "" : "; ") + failure;
  return out;
}

// NeedCandidate::shortfall: needed / available for memory (MemoryFor) and for the context (the
// model's maximum), achieved / required for latency; the largest of those `r` has.
double Shortfall(const model::PlanResult& r, const Need& need) {
  switch (r.status) {
    case model::PlanStatus::kInvalid:
      return std::numeric_limits<double>::infinity();
    case model::PlanStatus::kContextTooLong:
      return static_cast<double>(r.settings.deployment.context_tokens) /
             static_cast<double>(r.model.max_context_tokens);
    case model::PlanStatus::kWeightsDoNotFit:
    case model::PlanStatus::kNoRequestFits:
    case model::PlanStatus::kPlanned:
      break;
  }
  const MemoryNeed memory = MemoryFor(r, need);
  double shortfall = memory.budget_bytes > 0 ? memory.needed_bytes / memory.budget_bytes
                                             : std::numeric_limits<double>::infinity();
  if (!r.planned()) return shortfall;
  shortfall = std::max(shortfall, r.decode.front().ms_per_token / need.ms_per_token_max);
  if (need.ttft_ms_max > 0) {
    shortfall = std::max(shortfall, r.prefill.step.total_s * 1e3 / need.ttft_ms_max);
  }
  return shortfall;
}

// Whether `a` is nearer the need than `b`: the smaller shortfall, then the cheaper.
bool Nearer(const NeedCandidate& a, const NeedCandidate& b) {
  if (a.shortfall != b.shortfall) return a.shortfall < b.shortfall;
  return a.usd_per_hour < b.usd_per_hour;
}

// "; shortfall 1.06", or nothing where no ratio measures it. Near 1 with more digits, so that a
// miss never reads as "1.00".
std::string ShortfallText(double shortfall) {
  if (!std::isfinite(shortfall)) return "";
  if (std::abs(shortfall - 1) < 0.005) return fmt::format("; shortfall {:.4f}", shortfall);
  return fmt::format("; shortfall {:.2f}", shortfall);
}

std::string Deployment(const model::PlanResult& r) {
  const model::Deployment& d = r.settings.deployment;
  return fmt::format("{} x {} tp {}{}, {} cache, {} weights", d.gpus, r.settings.gpu, d.tp,
                     d.ep > 1 ? fmt::format(" ep {}", d.ep) : std::string(),
                     KvFormatName(d.kv_format), d.weight_variant);
}

// The values the search tries for each deployment field: the one given, or every one it searches.
struct SearchSpace {
  std::vector<std::string> gpus;
  std::optional<int> given_count;  // gpus given: only that count
  int max_gpus = 0;                // otherwise every multiple of tp up to this
  std::vector<int> tps;
  std::vector<std::string> kvs;
  std::vector<std::string> variants;
  bool search_ep = false;  // ep 1 and ep = tp
  bool pools_given = false;
};

Result<SearchSpace> SpaceFor(const model::Catalog& catalog, const model::ModelSpec& spec,
                             const model::PlanSettings& base, int max_gpus) {
  const model::Deployment& d = base.deployment;
  SearchSpace space;
  space.gpus = {base.gpu};
  if (!Given(base, "gpu")) space.gpus = catalog.GpuNames();
  if (Given(base, "gpus")) {
    space.given_count = d.gpus;
  } else {
    space.max_gpus = max_gpus;
  }
  if (Given(base, "tp")) {
    if (!space.given_count && d.tp > max_gpus) {
      return InvalidArgumentError(
          fmt::format("--max-gpus {} is below tp {}, so no GPU count is left to search; allowed: "
                      "--max-gpus at least tp",
                      max_gpus, d.tp));
    }
    space.tps = {d.tp};
  } else {
    for (const int tp : kNeedTpSizes) {
      if (space.given_count || tp <= max_gpus) space.tps.push_back(tp);
    }
  }
  space.kvs = {KvFormatName(d.kv_format)};
  if (!Given(base, "kv-format")) space.kvs = {"bf16", "fp8_e4m3"};
  space.variants = {d.weight_variant};
  if (!Given(base, "weights")) {
    space.variants.clear();
    for (const model::WeightVariant& v : spec.variants) space.variants.push_back(v.name);
  }
  // Expert parallelism: whole experts per GPU (ep = tp) beside split experts (ep 1), for models
  // with routed experts, unless --ep is given.
  space.search_ep = spec.moe.has_value() && !Given(base, "ep");
  space.pools_given = Given(base, "pools");
  return space;
}

// The GPU counts tried at tensor-parallel size `tp`, smallest first.
std::vector<int> GpuCounts(const SearchSpace& space, int tp) {
  if (space.given_count) {
    if (tp > *space.given_count || *space.given_count % tp != 0) return {};
    return {*space.given_count};
  }
  std::vector<int> counts;
  for (int count = tp; count <= space.max_gpus; count += tp) counts.push_back(count);
  return counts;
}

std::vector<std::string> SearchedText(const SearchSpace& space) {
  std::string counts;
  if (space.given_count) {
    counts = fmt::format("gpus {}", *space.given_count);
  } else {
    counts = fmt::format(
        "gpus {}..{} (every multiple of tp, each deployment until it meets the need or more GPUs "
        "change nothing)",
        *std::min_element(space.tps.begin(), space.tps.end()), space.max_gpus);
  }
  std::vector<std::string> searched = {
      "gpu " + Joined(space.gpus), counts,
      "tp " + Joined(Texts(space.tps)) + (space.given_count ? " (dividing gpus)" : ""),
      "kv-format " + Joined(space.kvs), "weights " + Joined(space.variants)};
  if (space.search_ep) searched.push_back("ep 1, tp");
  return searched;
}

// Whether a larger GPU count of `c`'s deployment (the same gpu, tp, ep, KV format and weights)
// could still be the cheapest way to meet the need. Not once `c` meets it: a larger count of the
// same GPU costs more per hour, so the cheapest of the deployment is its fewest GPUs that meet
// it, and every answer printed (cheapest first, and the cheapest on each GPU kind) is one of
// those. Nor, with pools = gpus / tp, when `c` cannot be planned or already serves one request
// per pool: more GPUs then only add replicas with the same weights, cache and step time per GPU,
// which fail the same way. With pools given, more GPUs change each pool's GPUs instead, until
// the replicas (gpus / tp) reach the pools: past that no count is valid.
bool MoreGpusMayHelp(const NeedCandidate& c, bool pools_given) {
  if (c.failure.empty()) return false;
  const model::Deployment& d = c.result.settings.deployment;
  if (pools_given) return d.replicas() < d.pools;
  if (!c.result.planned()) return false;
  return c.result.decode.front().requests_per_pool > 1;
}

// Plans `line` (every field but the GPU count set) at each of `counts`, smallest first, until a
// larger count cannot help (MoreGpusMayHelp), into `report`.
Status SearchCounts(const model::Catalog& catalog, const model::StepTimeParams& params,
                    const Need& need, const SearchSpace& space, double usd_per_gpu_hour,
                    model::PlanSettings line, const std::vector<int>& counts, NeedReport& report) {
  for (size_t i = 0; i < counts.size(); ++i) {
    line.deployment.gpus = counts[i];
    NeedCandidate c;
    KVSIM_ASSIGN_OR_RETURN(
        c.result, model::PlanOrShortfall(line, catalog, params, {need.concurrency}, nullptr));
    c.usd_per_hour = usd_per_gpu_hour * counts[i];
    c.failure = Failure(c.result, need);
    c.shortfall = Shortfall(c.result, need);
    const bool more = MoreGpusMayHelp(c, space.pools_given);
    if (more && i + 1 == counts.size() && !space.given_count) {
      ++report.short_at_max_gpus;
      report.usd_per_hour_beyond_max_gpus = std::min(
          report.usd_per_hour_beyond_max_gpus, usd_per_gpu_hour * (counts[i] + line.deployment.tp));
    }
    (c.failure.empty() ? report.meeting : report.failing).push_back(std::move(c));
    if (!more) break;
  }
  return Status::Ok();
}

// Where the GPU count stopped and whether a larger --max-gpus could give a cheaper answer, or ""
// when gpus was given.
std::string GpuCountStop(const NeedReport& report) {
  if (report.max_gpus == 0) return "";
  const std::string raise = "; raise --max-gpus to search further";
  if (report.meeting.empty()) {
    if (report.short_at_max_gpus > 0) {
      return fmt::format("stopped at --max-gpus {}, where {} deployments were still short{}",
                         report.max_gpus, report.short_at_max_gpus, raise);
    }
    return fmt::format(
        "no deployment reached --max-gpus {} short of the need: each stopped where more GPUs "
        "cannot help (weights or a request that do not fit, one request per pool, or as many "
        "replicas as the --pools given), so a larger --max-gpus would not help",
        report.max_gpus);
  }
  if (report.short_at_max_gpus > 0 &&
      report.usd_per_hour_beyond_max_gpus < report.meeting.front().usd_per_hour) {
    return fmt::format(
        "stopped at --max-gpus {}, where {} deployments were still short, and more GPUs of them "
        "could cost from {:.2f} USD/h, less than the cheapest that meets it{}",
        report.max_gpus, report.short_at_max_gpus, report.usd_per_hour_beyond_max_gpus, raise);
  }
  return fmt::format(
      "a larger --max-gpus (now {}) finds nothing cheaper: more GPUs cost more than the cheapest "
      "that meets it",
      report.max_gpus);
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

Result<int> MaxGpusFor(const std::optional<std::string>& text, const model::PlanSettings& base) {
  if (!text) return kNeedMaxGpusDefault;
  const std::optional<int64_t> n = model::ParseInteger(*text);
  if (!n || *n < 1 || *n > kNeedMaxGpusLimit) {
    return InvalidArgumentError(fmt::format(
        "--max-gpus '{}' is not allowed; allowed: an integer 1 to {}", *text, kNeedMaxGpusLimit));
  }
  if (Given(base, "gpus")) {
    return InvalidArgumentError(fmt::format(
        "--max-gpus limits the GPU counts --need searches, and gpus {} is given, so it has no "
        "effect; give one of them",
        base.deployment.gpus));
  }
  return static_cast<int>(*n);
}

Result<NeedReport> SolveNeed(const model::Catalog& catalog, const model::StepTimeParams& params,
                             const model::PlanSettings& base, const Need& need, int max_gpus) {
  KVSIM_ASSIGN_OR_RETURN(const model::ModelSpec spec, catalog.LoadModel(base.model));
  KVSIM_ASSIGN_OR_RETURN(const SearchSpace space, SpaceFor(catalog, spec, base, max_gpus));
  NeedReport report;
  report.searched = SearchedText(space);
  report.max_gpus = space.max_gpus;
  report.usd_per_hour_beyond_max_gpus = std::numeric_limits<double>::infinity();
  // Every field but the GPU count outside, so that each deployment's counts run smallest first
  // and stop where more GPUs cannot help (SearchCounts).
  for (const std::string& gpu : space.gpus) {
    KVSIM_ASSIGN_OR_RETURN(const model::GpuSpec gpu_spec, catalog.LoadGpu(gpu));
    const double usd_per_gpu_hour = base.deployment.usd_per_gpu_hour >= 0
                                        ? base.deployment.usd_per_gpu_hour
                                        : gpu_spec.usd_per_gpu_hour;
    for (const int tp : space.tps) {
      const std::vector<int> counts = GpuCounts(space, tp);
      if (counts.empty()) continue;
      std::vector<int> eps = {base.deployment.ep};
      if (space.search_ep) eps = tp > 1 ? std::vector<int>{1, tp} : std::vector<int>{1};
      for (const int ep : eps) {
        if (ep != 1 && ep != tp) continue;
        for (const std::string& kv : space.kvs) {
          for (const std::string& variant : space.variants) {
            model::PlanSettings line = base;
            line.gpu = gpu;
            line.deployment.tp = tp;
            line.deployment.ep = ep;
            KVSIM_ASSIGN_OR_RETURN(line.deployment.kv_format, ParseKvFormat(kv));
            line.deployment.weight_variant = variant;
            KVSIM_RETURN_IF_ERROR(SearchCounts(catalog, params, need, space, usd_per_gpu_hour,
                                               std::move(line), counts, report));
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
    out << fmt::format("{} meet it{}; the cheapest:\n", report.meeting.size(),
                       report.max_gpus > 0 ? ", each at its fewest GPUs" : "");
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
    // Each reason once, with how many failed for it and its nearest miss (Nearer) as example.
    std::map<std::string, std::pair<int, const NeedCandidate*>> reasons;
    const NeedCandidate* nearest = nullptr;
    for (const NeedCandidate& c : report.failing) {
      auto& [count, example] = reasons[ReasonKind(c.failure)];
      ++count;
      if (example == nullptr || Nearer(c, *example)) example = &c;
      if (nearest == nullptr || Nearer(c, *nearest)) nearest = &c;
    }
    out << "why the others do not:\n";
    for (const auto& [reason, entry] : reasons) {
      const NeedCandidate& example = *entry.second;
      const std::string detail = example.failure.size() > reason.size() + 2
                                     ? example.failure.substr(reason.size() + 2)
                                     : example.failure;
      out << fmt::format("  {:>4}  {} (closest: {}: {}{})\n", entry.first, reason,
                         Deployment(example.result), detail, ShortfallText(example.shortfall));
    }
    if (report.meeting.empty()) {
      out << fmt::format("nearest miss: {}: {}{}\n", Deployment(nearest->result), nearest->failure,
                         ShortfallText(nearest->shortfall));
    }
  }
  const std::string stop = GpuCountStop(report);
  if (!stop.empty()) out << stop << "\n";
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
  if (std::isfinite(c.shortfall)) j["shortfall"] = c.shortfall;
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
  if (report.max_gpus > 0) {
    j["max_gpus"] = report.max_gpus;
    j["short_at_max_gpus"] = report.short_at_max_gpus;
    if (report.short_at_max_gpus > 0) {
      j["usd_per_hour_beyond_max_gpus"] = report.usd_per_hour_beyond_max_gpus;
    }
  }
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
