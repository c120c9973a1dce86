// JSON and CSV output of a run report.
#include "sim/report/report_io.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "base/seed.h"
#include "sim/oracle/ownership_oracle.h"
#include "sim/report/provenance.h"

namespace kvsim::sim {
namespace {

using nlohmann::ordered_json;

double Ms(double ns) { return ns * 1e-6; }

ordered_json LatencyJson(const LatencySummary& s) {
  return ordered_json{{"count", s.count},
                      {"mean_ms", Ms(s.mean_ns)},
                      {"p50_ms", Ms(static_cast<double>(s.p50_ns))},
                      {"p90_ms", Ms(static_cast<double>(s.p90_ns))},
                      {"p99_ms", Ms(static_cast<double>(s.p99_ns))},
                      {"max_ms", Ms(static_cast<double>(s.max_ns))}};
}

const char* VerdictName(size_t verdict) {
  return AccessVerdictKey(static_cast<AccessVerdict>(verdict));
}

const char* AbortName(size_t code) {
  static const char* const kNames[6] = {"ok",           "bad_range",  "unrecorded",
                                        "out_of_range", "wrong_page", "stale_tag"};
  return kNames[code];
}

}  // namespace

void WriteReportJson(const RunReport& r, const ReportContext& context, std::ostream& out) {
  ordered_json j;
  j["kvsim_report"] = kReportFormatVersion;
  j["kvsim_version"] = kKvsimVersion;
  j["scenario"] = {{"name", r.scenario},
                   {"argument", context.scenario_argument},
                   {"path", context.scenario_path},
                   {"text", context.scenario_text},
                   {"content_hash", FormatSeed(ContentHash(context.scenario_text))}};
  j["run"] = {{"seed", FormatSeed(r.seed)},
              {"mode", r.mode},
              {"backend", r.backend},
              {"tracker", r.tracker},
              {"oracle", r.oracle},
              {"seal", r.seal},
              {"max_time_s", context.max_time_s},
              {"weaken", context.weaken},
              {"engine", context.engine}};
  j["reproduce"] = context.reproduce;
  j["stop"] = StopReasonName(r.stop);
  j["events"] = r.events;
  j["steps"] = r.steps;
  j["simulated_s"] = NsToSeconds(r.end_ns);
  j["requests"] = {{"arrived", r.arrived},
                   {"finished", r.finished},
                   {"cancelled", r.cancelled},
                   {"rejected", r.rejected},
                   {"aborted", r.aborted},
                   {"unfinished", r.unfinished},
                   {"retries", r.retries},
                   {"preemptions", r.preemptions},
                   {"transfers", r.transfers},
                   {"stores", r.stores},
                   {"stores_refused", r.stores_refused}};
  j["tokens"] = {{"output", r.output_tokens},
                 {"prefill", r.prefill_tokens},
                 {"prompt", r.prompt_tokens},
                 {"cached", r.cached_tokens},
                 {"output_per_s", r.output_tokens_per_s()}};
  j["latency"] = {{"ttft", LatencyJson(r.ttft)},         {"tpot", LatencyJson(r.tpot)},
                  {"itl", LatencyJson(r.itl)},           {"e2e", LatencyJson(r.e2e)},
                  {"queueing", LatencyJson(r.queueing)}, {"transfer", LatencyJson(r.transfer)}};
  const TokenGapSplit& g = r.gaps;
  j["token_gaps"] = {
      {"decode_only", {{"count", g.decode_only}, {"total_s", NsToSeconds(g.decode_only_ns)}}},
      {"with_prefill", {{"count", g.with_prefill}, {"total_s", NsToSeconds(g.with_prefill_ns)}}},
      {"waited", {{"count", g.waited}, {"total_s", NsToSeconds(g.waited_ns)}}},
      {"decode_only_modal_batch",
       {{"batch", g.modal_batch}, {"steps", g.modal_steps}, {"total_s", NsToSeconds(g.modal_ns)}}}};
  ordered_json series = ordered_json::array();
  for (const PoolSample& s : r.pool_series) {
    series.push_back({NsToSeconds(s.time_ns), s.pages_used, s.running, s.waiting});
  }
  ordered_json rules = ordered_json::object();
  for (const auto& [field, value] : r.rules) rules[field] = value;
  j["scheduler_rules"] = rules;
  ordered_json over = ordered_json::object();
  for (const auto& [field, preset_value] : r.rules_over_preset) over[field] = preset_value;
  j["scheduler_rules_over_preset"] = over;
  j["pool"] = {{"pages", r.pool_pages},
               {"page_size", r.page_size},
               {"peak_pages_used", r.peak_pages_used},
               {"peak_running", r.peak_running},
               {"evicted_pages", r.evicted_pages},
               {"cache_insert_refusals", r.cache_insert_refusals},
               {"same_step_hits", r.same_step_hits},
               {"withdrawn_pages", r.withdrawn_pages},
               {"output_pages_cached", r.output_pages_cached},
               {"series_columns", {"time_s", "pages_used", "running", "waiting"}},
               {"series", series}};
  ordered_json aborts;
  for (size_t code = 1; code < r.integrity.aborts.size(); ++code) {
    aborts[AbortName(code)] = r.integrity.aborts[code];
  }
  ordered_json writes;
  ordered_json reads;
  for (size_t v = 0; v < kAccessVerdicts; ++v) {
    writes[VerdictName(v)] = r.integrity.writes[v];
    reads[VerdictName(v)] = r.integrity.reads[v];
  }
  ordered_json fired;
  ordered_json drawn;
  for (const FaultTally& fault : r.faults) {
    fired[fault.name] = fault.fired;
    drawn[fault.name] = fault.drawn;
  }
  j["faults"] = {{"fired", fired}, {"drawn", drawn}, {"pool_refusals", r.pool_refusals}};
  j["integrity"] = {{"caught", r.integrity.caught},
                    {"sealed", r.integrity.sealed},
                    {"write_checks", r.integrity.write_checks},
                    {"read_checks", r.integrity.read_checks},
                    {"rows_checked", r.integrity.rows_checked},
                    {"aborts", aborts},
                    {"over_refusals_excused", r.integrity.over_refusals_excused},
                    {"over_refusals", r.integrity.over_refusals},
                    {"oracle_writes", writes},
                    {"oracle_reads", reads}};
  if (r.kernel.enabled) {
    const KernelCounts& k = r.kernel;
    j["kernel"] = {{"appended_tokens", k.appended_tokens},
                   {"append_errors", k.append_errors},
                   {"decode_rows", k.decode_rows},
                   {"decode_errors", k.decode_errors},
                   {"outputs_checked", k.outputs_checked},
                   {"outputs_outside_bound", k.outputs_outside_bound},
                   {"worst_error_over_bound", k.worst_ratio},
                   {"gemm_outputs_checked", k.gemm_outputs_checked},
                   {"gemm_outside_bound", k.gemm_outside_bound},
                   {"gemm_worst_error_over_bound", k.gemm_worst_ratio},
                   {"rewrites_checked", k.rewrites_checked},
                   {"rewrites_differing", k.rewrites_differing},
                   {"launches",
                    {{"append_kv", k.append_launches},
                     {"decode_attention",
                      {{"simple", k.decode_launches[0]}, {"fast", k.decode_launches[1]}}},
                     {"int4_gemm",
                      {{"simple", k.gemm_launches[0]}, {"fast", k.gemm_launches[1]}}}}}};
  }
  ordered_json findings = ordered_json::array();
  for (const Finding& f : r.findings) {
    findings.push_back({{"kind", FindingKindName(f.kind)},
                        {"step", f.step},
                        {"time_s", NsToSeconds(f.time_ns)},
                        {"request", f.request},
                        {"logical_page", f.logical_page},
                        {"page", f.page},
                        {"detail", f.detail}});
  }
  j["findings_total"] = r.findings_total;
  j["findings"] = findings;
  j["state_hash"] = FormatSeed(r.state_hash);
  AddChecksum(j);
  out << j.dump(2) << "\n";
}

void WriteRequestsCsv(const RunReport& r, std::ostream& out) {
  out << "id,client,retry_of,phase,prompt_tokens,output_tokens,generated,cached_tokens,"
         "preemptions,arrival_s,first_scheduled_s,first_token_s,last_token_s,end_s,reason,"
         "priority\n";
  const auto seconds = [](SimNs ns) {
    return ns < 0 ? std::string() : std::to_string(NsToSeconds(ns));
  };
  for (const RequestRecord& q : r.requests) {
    std::string reason = q.reason;
    for (char& c : reason) {
      if (c == ',' || c == '"' || c == '\n') c = ';';
    }
    out << q.id << ',' << q.client << ',' << q.retry_of << ',' << RequestPhaseName(q.phase) << ','
        << q.prompt_tokens << ',' << q.output_tokens << ',' << q.generated << ',' << q.cached_tokens
        << ',' << q.preemptions << ',' << seconds(q.arrival_ns) << ','
        << seconds(q.first_scheduled_ns) << ',' << seconds(q.first_token_ns) << ','
        << seconds(q.last_token_ns) << ',' << seconds(q.end_ns) << ',' << reason << ','
        << q.priority << '\n';
  }
}

namespace {

// The first place where `a` and `b` differ, as "path: A in the report, B now" ("" when equal);
// objects are walked in the report's order, arrays by index.
std::string FirstDifference(const ordered_json& a, const ordered_json& b, const std::string& at) {
  const auto value = [](const ordered_json& v) {
    std::string text = v.dump();
    return text.size() > 80 ? text.substr(0, 77) + "..." : text;
  };
  if (a.type() != b.type() || (!a.is_object() && !a.is_array() && a != b)) {
    return (at.empty() ? std::string("(the whole report)") : at) + ": " + value(a) +
           " in the report, " + value(b) + " now";
  }
  if (a.is_object()) {
    for (auto it = a.begin(); it != a.end(); ++it) {
      if (it.key() == "checksum" || it.key() == "kvsim_version") continue;
      const std::string path = at.empty() ? it.key() : at + "." + it.key();
      const auto other = b.find(it.key());
      if (other == b.end()) return path + ": in the report, missing now";
      std::string found = FirstDifference(*it, *other, path);
      if (!found.empty()) return found;
    }
    for (auto it = b.begin(); it != b.end(); ++it) {
      if (!a.contains(it.key())) return (at.empty() ? "" : at + ".") + it.key() + ": new now";
    }
  } else if (a.is_array()) {
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
      std::string found = FirstDifference(a[i], b[i], at + "[" + std::to_string(i) + "]");
      if (!found.empty()) return found;
    }
    if (a.size() != b.size()) {
      return at + ": " + std::to_string(a.size()) + " items in the report, " +
             std::to_string(b.size()) + " now";
    }
  }
  return "";
}

}  // namespace

std::string FirstReportDifference(const std::string& recorded, const std::string& rerun) {
  const ordered_json a = ordered_json::parse(recorded, nullptr, false);
  const ordered_json b = ordered_json::parse(rerun, nullptr, false);
  return FirstDifference(a, b, "");
}

Result<ReplayInput> ReadReplayInput(const std::string& json_text, const std::string& path) {
  const ordered_json j = ordered_json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgumentError(path + ": not a JSON report written by kvsim run --json");
  }
  const auto version = j.find("kvsim_report");
  if (version == j.end() || !version->is_number_integer()) {
    return InvalidArgumentError(path +
                                ": no integer 'kvsim_report' (the report's format "
                                "version); this kvsim reads version " +
                                std::to_string(kReportFormatVersion));
  }
  if (version->get<int64_t>() != kReportFormatVersion) {
    return InvalidArgumentError(path + ": a report of format version " + version->dump() +
                                " ('kvsim_report'); this kvsim reads version " +
                                std::to_string(kReportFormatVersion) +
                                ": run the scenario again with this kvsim");
  }
  KVSIM_RETURN_IF_ERROR(CheckChecksum(j, path));
  ReplayInput input;
  KVSIM_ASSIGN_OR_RETURN(input.version_note, VersionNote(j, path));
  const auto text_at = [&](const char* section, const char* key) -> Result<std::string> {
    const auto outer = j.find(section);
    if (outer == j.end() || !outer->is_object()) {
      return InvalidArgumentError(path + ": no '" + section + "' object in the report");
    }
    const auto inner = outer->find(key);
    if (inner == outer->end() || !inner->is_string()) {
      return InvalidArgumentError(path + ": no string '" + section + "." + key + "' in the report");
    }
    return inner->get<std::string>();
  };
  KVSIM_ASSIGN_OR_RETURN(input.scenario_argument, text_at("scenario", "argument"));
  KVSIM_ASSIGN_OR_RETURN(input.scenario_path, text_at("scenario", "path"));
  KVSIM_ASSIGN_OR_RETURN(input.scenario_text, text_at("scenario", "text"));
  KVSIM_ASSIGN_OR_RETURN(const std::string content_hash, text_at("scenario", "content_hash"));
  if (content_hash != FormatSeed(ContentHash(input.scenario_text))) {
    return InvalidArgumentError(path + ": field 'scenario.content_hash': " + content_hash +
                                " is not the hash of scenario.text (" +
                                FormatSeed(ContentHash(input.scenario_text)) +
                                "): the scenario's text was edited");
  }
  KVSIM_ASSIGN_OR_RETURN(const std::string seed, text_at("run", "seed"));
  const Result<uint64_t> parsed_seed = ParseSeed(seed);
  if (!parsed_seed.ok()) return parsed_seed.status().WithContext(path + ": field 'run.seed'");
  input.seed = *parsed_seed;
  KVSIM_ASSIGN_OR_RETURN(input.mode, text_at("run", "mode"));
  KVSIM_ASSIGN_OR_RETURN(input.backend, text_at("run", "backend"));
  KVSIM_ASSIGN_OR_RETURN(input.weaken, text_at("run", "weaken"));
  KVSIM_ASSIGN_OR_RETURN(input.engine, text_at("run", "engine"));
  const ordered_json& run = j.at("run");
  const auto max_time = run.find("max_time_s");
  // The range `kvsim run --max-time-s` takes: 0 (the scenario's own limits) to 9e9 seconds.
  if (max_time == run.end() || !max_time->is_number() || !(max_time->get<double>() >= 0) ||
      max_time->get<double>() > 9e9) {
    return InvalidArgumentError(
        path + ": field 'run.max_time_s': " +
        (max_time == run.end() ? std::string("missing") : "'" + max_time->dump() + "'") +
        "; expected a number of seconds from 0 (the scenario's limits) "
        "to 9e9");
  }
  input.max_time_s = max_time->get<double>();
  const auto hash = j.find("state_hash");
  if (hash == j.end() || !hash->is_string()) {
    return InvalidArgumentError(path + ": no string 'state_hash' in the report");
  }
  const Result<uint64_t> parsed_hash = ParseSeed(hash->get<std::string>());
  if (!parsed_hash.ok()) return parsed_hash.status().WithContext(path + ": field 'state_hash'");
  input.state_hash = *parsed_hash;
  return input;
}

}  // namespace kvsim::sim
