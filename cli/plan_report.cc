// Plan printers.
#include "cli/plan_report.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "base/check.h"
#include "base/units.h"
#include "cli/text_table.h"

namespace kvsim::cli {
namespace {

using model::Component;
using model::PlanResult;

// `text` as one CSV field (RFC 4180): quoted, with its quotes doubled, when it holds a comma, a
// quote or a line break (names come from user YAML and may); `always` quotes it regardless.
std::string CsvField(const std::string& text, bool always = false) {
  if (!always && text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

// The parts of a token's KV bytes: the table's row name, and the key JSON and CSV use.
struct KvPart {
  const char* row;
  const char* key;
  uint64_t model::KvBreakdown::*bytes;
};
constexpr KvPart kKvParts[] = {
    {"keys", "keys", &model::KvBreakdown::keys},
    {"values", "values", &model::KvBreakdown::values},
    {"MLA latent", "latent", &model::KvBreakdown::latent},
    {"MLA rotary key", "rope", &model::KvBreakdown::rope},
    {"scales", "scales", &model::KvBreakdown::scales},
    {"indexer keys", "indexer_keys", &model::KvBreakdown::indexer_keys},
    {"indexer scales", "indexer_scales", &model::KvBreakdown::indexer_scales},
};

std::string Gib(uint64_t bytes) { return fmt::format("{:.2f}", BytesToGiB(bytes)); }

std::vector<std::string> Headers(const std::string& first, const std::vector<LabeledPlan>& plans) {
  std::vector<std::string> headers = {first};
  for (const auto& plan : plans) headers.push_back(plan.label.empty() ? "value" : plan.label);
  return headers;
}

// A row with one cell per plan, made by `cell`.
template <typename Cell>
void AddRow(TextTable& table, const std::string& name, const std::vector<LabeledPlan>& plans,
            Cell cell) {
  std::vector<std::string> cells = {name};
  for (const auto& plan : plans) cells.push_back(cell(plan.result));
  table.AddRow(std::move(cells));
}

// The same for a figure only a planned configuration has: "-" for the others.
template <typename Cell>
void AddPlannedRow(TextTable& table, const std::string& name, const std::vector<LabeledPlan>& plans,
                   Cell cell) {
  AddRow(table, name, plans,
         [&cell](const PlanResult& r) -> std::string { return r.planned() ? cell(r) : "-"; });
}

// A figure a configuration has when its deployment is valid (its weights and KV bytes).
template <typename Cell>
void AddValidRow(TextTable& table, const std::string& name, const std::vector<LabeledPlan>& plans,
                 Cell cell) {
  AddRow(table, name, plans, [&cell](const PlanResult& r) -> std::string {
    return r.status != model::PlanStatus::kInvalid ? cell(r) : "-";
  });
}

// A figure of the KV cache a configuration has when its weights fit.
template <typename Cell>
void AddCacheRow(TextTable& table, const std::string& name, const std::vector<LabeledPlan>& plans,
                 Cell cell) {
  AddRow(table, name, plans, [&cell](const PlanResult& r) -> std::string {
    return r.status != model::PlanStatus::kInvalid && r.capacity.weights_fit ? cell(r) : "-";
  });
}

bool AllPlanned(const std::vector<LabeledPlan>& plans) {
  for (const auto& plan : plans) {
    if (!plan.result.planned()) return false;
  }
  return true;
}

bool AnyOutput(const std::vector<LabeledPlan>& plans) {
  for (const auto& plan : plans) {
    if (plan.result.settings.deployment.output_tokens > 0) return true;
  }
  return false;
}

// USD per million tokens, input and output together, for requests of the deployment's prompt
// and output: each prompt token at the prefill price, each output token at the decode price.
double BlendedUsdPerMillion(const PlanResult& r, const model::DecodeEstimate& e) {
  const model::Deployment& d = r.settings.deployment;
  const double prompt = static_cast<double>(model::PromptTokens(d));
  const double output = static_cast<double>(d.output_tokens);
  return (prompt * r.prefill.usd_per_million_tokens + output * e.usd_per_million_tokens) /
         (prompt + output);
}

nlohmann::json OperatorsJson(const model::StepTimeBreakdown& step) {
  nlohmann::json ops = nlohmann::json::object();
  for (int op = 0; op < model::kOperatorCount; ++op) {
    const double seconds = step.operator_s[static_cast<size_t>(op)];
    if (seconds > 0) ops[model::OperatorName(static_cast<model::Operator>(op))] = seconds * 1e3;
  }
  return ops;
}

void PrintSetup(std::ostream& out, const std::vector<LabeledPlan>& plans) {
  TextTable table(Headers("configuration", plans));
  AddRow(table, "model", plans, [](const PlanResult& r) { return r.model.name; });
  AddRow(table, "GPU", plans, [](const PlanResult& r) {
    return fmt::format("{} x {}", r.settings.deployment.gpus, r.gpu.name);
  });
  AddRow(table, "tensor parallel / KV pools", plans, [](const PlanResult& r) {
    return fmt::format("{} / {}", r.settings.deployment.tp, r.settings.deployment.pool_count());
  });
  AddRow(table, "weights", plans, [](const PlanResult& r) { return r.weight_variant; });
  AddRow(table, "KV cache format", plans,
         [](const PlanResult& r) { return KvFormatName(r.settings.deployment.kv_format); });
  AddRow(table, "tokens per request", plans,
         [](const PlanResult& r) { return Grouped(r.settings.deployment.context_tokens); });
  AddRow(table, "of which output", plans, [](const PlanResult& r) {
    const int64_t output = r.settings.deployment.output_tokens;
    return output > 0 ? Grouped(output) : std::string("not given (decode at full length)");
  });
  AddRow(table, "model's maximum context", plans,
         [](const PlanResult& r) { return Grouped(r.model.max_context_tokens); });
  if (!AllPlanned(plans)) {
    AddRow(table, "status", plans,
           [](const PlanResult& r) { return r.planned() ? std::string("planned") : r.shortfall; });
  }
  table.Print(out);
  // Where the step times come from, once when every configuration shares it.
  std::string sources;
  for (const auto& plan : plans) {
    const std::string& source = plan.result.step_time_source;
    if (source.empty() || sources.find(source) != std::string::npos) continue;
    sources += (sources.empty() ? "" : "; ") + source;
  }
  if (!sources.empty()) out << "step times fitted to: " << sources << "\n";
}

void PrintMemory(std::ostream& out, const std::vector<LabeledPlan>& plans) {
  TextTable table(Headers("memory per GPU (GiB)", plans));
  AddValidRow(table, "GPU memory", plans,
              [](const PlanResult& r) { return Gib(r.capacity.memory_bytes); });
  AddValidRow(table, "budget: memory x fraction - reserved", plans, [](const PlanResult& r) {
    return fmt::format("{} (x {})", Gib(r.capacity.budget_bytes),
                       r.settings.deployment.memory_fraction);
  });
  AddValidRow(table, "weights", plans,
              [](const PlanResult& r) { return Gib(r.capacity.weight_bytes); });
  for (int c = 0; c < model::kComponentCount; ++c) {
    const auto component = static_cast<Component>(c);
    bool any = false;
    for (const auto& plan : plans) any = any || plan.result.weights.component(component).params > 0;
    if (!any) continue;
    AddValidRow(table, std::string("  ") + model::ComponentName(component), plans,
                [component](const PlanResult& r) {
                  return Gib(r.weights.component(component).per_gpu_bytes);
                });
  }
  AddCacheRow(table, "KV cache", plans,
              [](const PlanResult& r) { return Gib(r.capacity.kv_budget_bytes); });
  AddValidRow(table, "checkpoint (all GPUs, GiB)", plans,
              [](const PlanResult& r) { return Gib(r.weights.checkpoint_bytes()); });
  table.Print(out);
}

void PrintCapacity(std::ostream& out, const std::vector<LabeledPlan>& plans) {
  TextTable table(Headers("KV cache", plans));
  AddValidRow(table, "bytes per token per GPU", plans,
              [](const PlanResult& r) { return Grouped(static_cast<int64_t>(r.kv.total())); });
  for (const KvPart& part : kKvParts) {
    bool any = false;
    for (const auto& plan : plans) any = any || plan.result.kv.*part.bytes > 0;
    if (!any) continue;
    AddValidRow(table, std::string("  ") + part.row, plans, [&part](const PlanResult& r) {
      return Grouped(static_cast<int64_t>(r.kv.*part.bytes));
    });
  }
  AddCacheRow(table, "tokens per pool", plans,
              [](const PlanResult& r) { return Grouped(r.capacity.tokens_per_pool); });
  AddCacheRow(table, "tokens in all pools", plans,
              [](const PlanResult& r) { return Grouped(r.capacity.tokens_total); });
  AddCacheRow(table, "requests that fit at once", plans,
              [](const PlanResult& r) { return Grouped(r.capacity.max_requests_total); });
  AddCacheRow(table, "first request that does not fit", plans,
              [](const PlanResult& r) { return "#" + Grouped(r.capacity.max_requests_total + 1); });
  table.Print(out);
  out << "\n";
  TextTable prefill(Headers("prefill (one prompt per pool)", plans));
  AddPlannedRow(prefill, "prompt tokens", plans,
                [](const PlanResult& r) { return Grouped(r.prefill.prompt_tokens); });
  AddPlannedRow(prefill, "time to prefill one prompt (ms)", plans, [](const PlanResult& r) {
    return fmt::format("{:.1f}", r.prefill.step.total_s * 1e3);
  });
  AddPlannedRow(prefill, "tokens/s", plans, [](const PlanResult& r) {
    return Grouped(static_cast<int64_t>(std::llround(r.prefill.tokens_per_s)));
  });
  AddPlannedRow(prefill, "USD per million prompt tokens", plans, [](const PlanResult& r) {
    return fmt::format("{:.2f}", r.prefill.usd_per_million_tokens);
  });
  prefill.Print(out);
}

void PrintDecode(std::ostream& out, const std::vector<LabeledPlan>& plans) {
  if (plans.empty() || plans.front().result.decode.empty()) return;
  const bool blended = AnyOutput(plans);
  std::vector<std::string> headers = {"concurrency"};
  for (const auto& plan : plans) {
    const std::string prefix = plan.label.empty() ? "" : plan.label + " ";
    headers.push_back(prefix + "tok/s");
    headers.push_back("ms/tok");
    headers.push_back("USD/Mtok");
    if (blended) headers.push_back("blended");
    headers.push_back("max context");
  }
  TextTable table(std::move(headers));
  const size_t points = plans.front().result.decode.size();
  for (size_t i = 0; i < points; ++i) {
    std::vector<std::string> cells = {std::to_string(plans.front().result.decode[i].concurrency)};
    for (const auto& plan : plans) {
      const PlanResult& r = plan.result;
      const model::DecodeEstimate& e = r.decode[i];
      const std::string longest = Grouped(e.longest_context);
      if (!r.planned()) {
        cells.insert(cells.end(), {"not planned", "-", "-"});
        if (blended) cells.push_back("-");
        cells.push_back("-");
        continue;
      }
      if (!e.fits) {
        cells.insert(cells.end(), {"out of memory", "-", "-"});
        if (blended) cells.push_back("-");
        cells.push_back(longest);
        continue;
      }
      cells.push_back(fmt::format("{:.0f}", e.tokens_per_s));
      cells.push_back(fmt::format("{:.1f}", e.ms_per_token));
      cells.push_back(fmt::format("{:.2f}", e.usd_per_million_tokens));
      if (blended) {
        cells.push_back(r.settings.deployment.output_tokens > 0
                            ? fmt::format("{:.2f}", BlendedUsdPerMillion(r, e))
                            : std::string("-"));
      }
      cells.push_back(longest);
    }
    table.AddRow(std::move(cells));
  }
  out << "decode (all replicas; ms/tok is one request's time between tokens; max context is the\n"
         "longest request of which that many fit at once"
      << (blended ? "; blended is USD per million input and output tokens at the prompt:output "
                    "ratio"
                  : "")
      << "):\n";
  table.Print(out);
}

nlohmann::json DecodeJson(const PlanResult& r, const model::DecodeEstimate& e) {
  if (!r.planned()) return {{"concurrency", e.concurrency}, {"fits", false}};
  nlohmann::json j = {{"concurrency", e.concurrency},
                      {"fits", e.fits},
                      {"requests_per_pool", e.requests_per_pool},
                      {"attended_context_tokens", e.attended_context},
                      {"longest_context_tokens", e.longest_context},
                      {"experts_touched_per_layer", e.step.experts_touched},
                      {"weight_read_bytes_per_gpu", e.step.weight_read_bytes},
                      {"kv_read_bytes_per_gpu", e.step.kv_read_bytes},
                      {"step_ms", e.step_s * 1e3},
                      {"operators_ms", OperatorsJson(e.step)}};
  if (e.fits) {
    j["tokens_per_s"] = e.tokens_per_s;
    j["ms_per_token"] = e.ms_per_token;
    j["usd_per_million_tokens"] = e.usd_per_million_tokens;
    j["blended_usd_per_million_tokens"] = r.settings.deployment.output_tokens > 0
                                              ? nlohmann::json(BlendedUsdPerMillion(r, e))
                                              : nlohmann::json(nullptr);
  }
  return j;
}

const char* StatusName(model::PlanStatus status) {
  switch (status) {
    case model::PlanStatus::kPlanned:
      return "planned";
    case model::PlanStatus::kInvalid:
      return "invalid";
    case model::PlanStatus::kContextTooLong:
      return "context_too_long";
    case model::PlanStatus::kWeightsDoNotFit:
      return "weights_do_not_fit";
    case model::PlanStatus::kNoRequestFits:
      return "no_request_fits";
  }
  return "?";
}

nlohmann::json PlanJson(const LabeledPlan& plan) {
  const PlanResult& r = plan.result;
  const model::Deployment& d = r.settings.deployment;
  nlohmann::json weights = nlohmann::json::object();
  for (int c = 0; c < model::kComponentCount; ++c) {
    const auto& w = r.weights.components[c];
    if (w.params == 0) continue;
    weights[model::ComponentName(static_cast<Component>(c))] = {
        {"params", w.params},
        {"checkpoint_bytes", w.checkpoint_bytes},
        {"per_gpu_bytes", w.per_gpu_bytes}};
  }
  // Every part, zeros included, so every configuration has the same keys.
  nlohmann::json kv_parts = nlohmann::json::object();
  for (const KvPart& part : kKvParts) kv_parts[part.key] = r.kv.*part.bytes;
  nlohmann::json decode = nlohmann::json::array();
  for (const auto& e : r.decode) decode.push_back(DecodeJson(r, e));
  // Figures a configuration lacks are null, so every configuration has the same keys.
  const auto if_planned = [&r](auto value) -> nlohmann::json {
    return r.planned() ? nlohmann::json(value) : nlohmann::json(nullptr);
  };
  const bool has_cache = r.status != model::PlanStatus::kInvalid && r.capacity.weights_fit;
  const auto if_cache = [has_cache](auto value) -> nlohmann::json {
    return has_cache ? nlohmann::json(value) : nlohmann::json(nullptr);
  };
  nlohmann::json prefill = nullptr;
  if (r.planned()) {
    prefill = {{"prompt_tokens", r.prefill.prompt_tokens},
               {"time_ms", r.prefill.step.total_s * 1e3},
               {"tokens_per_s", r.prefill.tokens_per_s},
               {"usd_per_million_tokens", r.prefill.usd_per_million_tokens},
               {"operators_ms", OperatorsJson(r.prefill.step)}};
  }
  return {
      {"label", plan.label},
      {"model", r.model.name},
      {"gpu", r.gpu.name},
      {"gpus", d.gpus},
      {"tp", d.tp},
      {"pools", d.pool_count()},
      {"memory_fraction", d.memory_fraction},
      {"reserved_bytes", d.reserved_bytes},
      {"kv_format", KvFormatName(d.kv_format)},
      {"page_size", d.page_size},
      {"weights", r.weight_variant},
      {"context_tokens", d.context_tokens},
      {"output_tokens",
       d.output_tokens > 0 ? nlohmann::json(d.output_tokens) : nlohmann::json(nullptr)},
      {"max_context_tokens", r.model.max_context_tokens},
      {"status", StatusName(r.status)},
      {"weights_fit", r.capacity.weights_fit && r.status != model::PlanStatus::kInvalid},
      {"does_not_fit", r.planned() ? nlohmann::json(nullptr) : nlohmann::json(r.shortfall)},
      {"step_time_source", r.step_time_source},
      {"budget_bytes_per_gpu", r.capacity.budget_bytes},
      {"weight_bytes_per_gpu", r.capacity.weight_bytes},
      {"checkpoint_bytes", r.weights.checkpoint_bytes()},
      {"weight_components", weights},
      {"kv_budget_bytes_per_gpu", if_cache(r.capacity.kv_budget_bytes)},
      {"kv_bytes_per_token_per_gpu", r.kv.total()},
      {"kv_bytes_per_token_per_gpu_by_part", kv_parts},
      {"tokens_per_pool", if_cache(r.capacity.tokens_per_pool)},
      {"tokens_total", if_cache(r.capacity.tokens_total)},
      {"max_requests", if_cache(r.capacity.max_requests_total)},
      {"prefill_tokens_per_s", if_planned(r.prefill.tokens_per_s)},
      {"prefill", prefill},
      {"decode", decode},
  };
}

nlohmann::json DerivationJson(const model::Derivation& derivation) {
  nlohmann::json sections = nlohmann::json::array();
  for (const auto& group : derivation.groups()) {
    nlohmann::json terms = nlohmann::json::array();
    for (const auto& term : group.terms) {
      terms.push_back(
          {{"quantity", term.quantity}, {"formula", term.formula}, {"value", term.value}});
    }
    sections.push_back({{"section", group.title}, {"terms", terms}});
  }
  return sections;
}

}  // namespace

void PrintPlanText(std::ostream& out, const std::vector<LabeledPlan>& plans) {
  PrintSetup(out, plans);
  out << "\n";
  PrintMemory(out, plans);
  out << "\n";
  PrintCapacity(out, plans);
  out << "\n";
  PrintDecode(out, plans);
}

void PrintPlanJson(std::ostream& out, const std::vector<LabeledPlan>& plans,
                   const std::vector<model::Derivation>* derivations) {
  KVSIM_CHECK(derivations == nullptr || derivations->size() == plans.size());
  nlohmann::json configurations = nlohmann::json::array();
  for (size_t i = 0; i < plans.size(); ++i) {
    configurations.push_back(PlanJson(plans[i]));
    if (derivations != nullptr)
      configurations.back()["explain"] = DerivationJson((*derivations)[i]);
  }
  // Labels and names come from flags and files and need not be UTF-8; JSON must be, so invalid
  // bytes become U+FFFD instead of an exception.
  out << nlohmann::json{{"configurations", configurations}}.dump(
             2, ' ', false, nlohmann::json::error_handler_t::replace)
      << "\n";
}

void PrintPlanCsv(std::ostream& out, const std::vector<LabeledPlan>& plans) {
  out << "label,model,gpu,gpus,tp,pools,kv_format,weights,context_tokens,output_tokens,"
         "memory_fraction,status,weights_fit,does_not_fit,step_time_source,budget_bytes_per_gpu,"
         "weight_bytes_per_gpu,kv_bytes_per_token_per_gpu,";
  for (const KvPart& part : kKvParts) out << "kv_" << part.key << ",";
  out << "tokens_total,max_requests,prefill_tokens_per_s,concurrency,fits,longest_context_tokens,"
         "tokens_per_s,ms_per_token,usd_per_million_tokens,blended_usd_per_million_tokens\n";
  for (const auto& plan : plans) {
    const PlanResult& r = plan.result;
    const model::Deployment& d = r.settings.deployment;
    const bool has_cache = r.status != model::PlanStatus::kInvalid && r.capacity.weights_fit;
    // Capacity and prefill: empty where the configuration lacks them, like the decode figures.
    const std::string capacity =
        has_cache ? fmt::format("{},{},", r.capacity.tokens_total, r.capacity.max_requests_total)
                  : ",,";
    const std::string prefill = r.planned() ? fmt::format("{:.1f}", r.prefill.tokens_per_s) : "";
    std::string kv_parts;
    for (const KvPart& part : kKvParts) kv_parts += fmt::format("{},", r.kv.*part.bytes);
    for (const auto& e : r.decode) {
      out << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}{}{},{},{},{},",
                         CsvField(plan.label, true), CsvField(r.model.name), CsvField(r.gpu.name),
                         d.gpus, d.tp, d.pool_count(), KvFormatName(d.kv_format),
                         CsvField(r.weight_variant), d.context_tokens,
                         d.output_tokens > 0 ? std::to_string(d.output_tokens) : "",
                         d.memory_fraction, StatusName(r.status), has_cache ? "true" : "false",
                         r.planned() ? "" : CsvField(r.shortfall), CsvField(r.step_time_source),
                         r.capacity.budget_bytes, r.capacity.weight_bytes, r.kv.total(), kv_parts,
                         capacity, prefill, e.concurrency, e.fits ? "true" : "false",
                         r.planned() ? std::to_string(e.longest_context) : "");
      if (e.fits) {
        out << fmt::format("{:.1f},{:.3f},{:.4f},{}\n", e.tokens_per_s, e.ms_per_token,
                           e.usd_per_million_tokens,
                           d.output_tokens > 0 ? fmt::format("{:.4f}", BlendedUsdPerMillion(r, e))
                                               : std::string());
      } else {
        out << ",,,\n";
      }
    }
  }
}

void PrintExplanation(std::ostream& out, const std::string& label,
                      const model::Derivation& derivation) {
  out << "explain" << (label.empty() ? "" : " " + label) << ":\n";
  for (const auto& group : derivation.groups()) {
    out << "  " << group.title << "\n";
    for (const auto& term : group.terms) {
      out << "    " << term.quantity << " = " << term.formula << "\n";
      out << "      = " << term.value << "\n";
    }
  }
}

}  // namespace kvsim::cli
