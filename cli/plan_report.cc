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

// The same for a figure only a configuration whose weights fit has: "-" for the others.
template <typename Cell>
void AddFitRow(TextTable& table, const std::string& name, const std::vector<LabeledPlan>& plans,
               Cell cell) {
  AddRow(table, name, plans, [&cell](const PlanResult& r) -> std::string {
    return r.capacity.weights_fit ? cell(r) : "-";
  });
}

bool AllFit(const std::vector<LabeledPlan>& plans) {
  for (const auto& plan : plans) {
    if (!plan.result.capacity.weights_fit) return false;
  }
  return true;
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
  AddRow(table, "KV cache dtype", plans,
         [](const PlanResult& r) { return KvFormatName(r.settings.deployment.kv_format); });
  AddRow(table, "tokens per request", plans,
         [](const PlanResult& r) { return Grouped(r.settings.deployment.context_tokens); });
  if (!AllFit(plans)) {
    AddRow(table, "status", plans, [](const PlanResult& r) {
      return r.capacity.weights_fit ? std::string("planned") : WeightsDoNotFitText(r.capacity);
    });
  }
  table.Print(out);
}

void PrintMemory(std::ostream& out, const std::vector<LabeledPlan>& plans) {
  TextTable table(Headers("memory per GPU (GiB)", plans));
  AddRow(table, "GPU memory", plans,
         [](const PlanResult& r) { return Gib(r.capacity.memory_bytes); });
  AddRow(table, "budget: memory x fraction - reserved", plans, [](const PlanResult& r) {
    return fmt::format("{} (x {})", Gib(r.capacity.budget_bytes),
                       r.settings.deployment.memory_fraction);
  });
  AddRow(table, "weights", plans, [](const PlanResult& r) { return Gib(r.capacity.weight_bytes); });
  for (int c = 0; c < model::kComponentCount; ++c) {
    const auto component = static_cast<Component>(c);
    bool any = false;
    for (const auto& plan : plans) any = any || plan.result.weights.component(component).params > 0;
    if (!any) continue;
    AddRow(table, std::string("  ") + model::ComponentName(component), plans,
           [component](const PlanResult& r) {
             return Gib(r.weights.component(component).per_gpu_bytes);
           });
  }
  AddFitRow(table, "KV cache", plans,
            [](const PlanResult& r) { return Gib(r.capacity.kv_budget_bytes); });
  AddRow(table, "checkpoint (all GPUs, GiB)", plans,
         [](const PlanResult& r) { return Gib(r.weights.checkpoint_bytes()); });
  table.Print(out);
}

void PrintCapacity(std::ostream& out, const std::vector<LabeledPlan>& plans) {
  TextTable table(Headers("KV cache", plans));
  AddRow(table, "bytes per token per GPU", plans,
         [](const PlanResult& r) { return Grouped(static_cast<int64_t>(r.kv.total())); });
  for (const KvPart& part : kKvParts) {
    bool any = false;
    for (const auto& plan : plans) any = any || plan.result.kv.*part.bytes > 0;
    if (!any) continue;
    AddRow(table, std::string("  ") + part.row, plans, [&part](const PlanResult& r) {
      return Grouped(static_cast<int64_t>(r.kv.*part.bytes));
    });
  }
  AddFitRow(table, "tokens per pool", plans,
            [](const PlanResult& r) { return Grouped(r.capacity.tokens_per_pool); });
  AddFitRow(table, "tokens in all pools", plans,
            [](const PlanResult& r) { return Grouped(r.capacity.tokens_total); });
  AddFitRow(table, "requests that fit at once", plans,
            [](const PlanResult& r) { return Grouped(r.capacity.max_requests_total); });
  AddFitRow(table, "first request that does not fit", plans,
            [](const PlanResult& r) { return "#" + Grouped(r.capacity.max_requests_total + 1); });
  table.Print(out);
  out << "\n";
  TextTable prefill(Headers("prefill (compute-bound)", plans));
  AddFitRow(prefill, "tokens/s, prompts of the request length", plans, [](const PlanResult& r) {
    return Grouped(static_cast<int64_t>(std::llround(r.prefill.tokens_per_s)));
  });
  AddFitRow(prefill, "USD per million prompt tokens", plans, [](const PlanResult& r) {
    return fmt::format("{:.2f}", r.prefill.usd_per_million_tokens);
  });
  prefill.Print(out);
}

void PrintDecode(std::ostream& out, const std::vector<LabeledPlan>& plans) {
  if (plans.empty() || plans.front().result.decode.empty()) return;
  std::vector<std::string> headers = {"concurrency"};
  for (const auto& plan : plans) {
    const std::string prefix = plan.label.empty() ? "" : plan.label + " ";
    headers.push_back(prefix + "tok/s");
    headers.push_back("ms/tok");
    headers.push_back("USD/Mtok");
  }
  TextTable table(std::move(headers));
  const size_t points = plans.front().result.decode.size();
  for (size_t i = 0; i < points; ++i) {
    std::vector<std::string> cells = {std::to_string(plans.front().result.decode[i].concurrency)};
    for (const auto& plan : plans) {
      const model::DecodeEstimate& e = plan.result.decode[i];
      if (!plan.result.capacity.weights_fit) {
        cells.insert(cells.end(), {"weights do not fit", "-", "-"});
        continue;
      }
      if (!e.fits) {
        cells.insert(cells.end(), {"out of memory", "-", "-"});
        continue;
      }
      cells.push_back(fmt::format("{:.0f}", e.tokens_per_s));
      cells.push_back(fmt::format("{:.1f}", e.ms_per_token));
      cells.push_back(fmt::format("{:.2f}", e.usd_per_million_tokens));
    }
    table.AddRow(std::move(cells));
  }
  out << "decode (all replicas; ms/tok is one request's time between tokens):\n";
  table.Print(out);
}

nlohmann::json DecodeJson(const model::DecodeEstimate& e, bool weights_fit) {
  if (!weights_fit) return {{"concurrency", e.concurrency}, {"fits", false}};
  nlohmann::json j = {{"concurrency", e.concurrency},
                      {"fits", e.fits},
                      {"requests_per_pool", e.requests_per_pool},
                      {"experts_touched_per_layer", e.experts_touched},
                      {"weight_read_bytes_per_gpu", e.weight_read_bytes},
                      {"kv_read_bytes_per_gpu", e.kv_read_bytes},
                      {"step_ms", e.step_s * 1e3}};
  if (e.fits) {
    j["tokens_per_s"] = e.tokens_per_s;
    j["ms_per_token"] = e.ms_per_token;
    j["usd_per_million_tokens"] = e.usd_per_million_tokens;
  }
  return j;
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
  for (const auto& e : r.decode) decode.push_back(DecodeJson(e, r.capacity.weights_fit));
  // Figures a configuration whose weights do not fit lacks are null, so every configuration has
  // the same keys.
  const auto if_fit = [&r](auto value) -> nlohmann::json {
    return r.capacity.weights_fit ? nlohmann::json(value) : nlohmann::json(nullptr);
  };
  return {
      {"label", plan.label},
      {"model", r.model.name},
      {"gpu", r.gpu.name},
      {"gpus", d.gpus},
      {"tp", d.tp},
      {"pools", d.pool_count()},
      {"memory_fraction", d.memory_fraction},
      {"reserved_bytes", d.reserved_bytes},
      {"kv_dtype", KvFormatName(d.kv_format)},
      {"page_size", d.page_size},
      {"weights", r.weight_variant},
      {"context_tokens", d.context_tokens},
      {"weights_fit", r.capacity.weights_fit},
      {"does_not_fit", r.capacity.weights_fit ? nlohmann::json(nullptr)
                                              : nlohmann::json(WeightsDoNotFitText(r.capacity))},
      {"budget_bytes_per_gpu", r.capacity.budget_bytes},
      {"weight_bytes_per_gpu", r.capacity.weight_bytes},
      {"checkpoint_bytes", r.weights.checkpoint_bytes()},
      {"weight_components", weights},
      {"kv_budget_bytes_per_gpu", if_fit(r.capacity.kv_budget_bytes)},
      {"kv_bytes_per_token_per_gpu", r.kv.total()},
      {"kv_bytes_per_token_per_gpu_by_part", kv_parts},
      {"tokens_per_pool", if_fit(r.capacity.tokens_per_pool)},
      {"tokens_total", if_fit(r.capacity.tokens_total)},
      {"max_requests", if_fit(r.capacity.max_requests_total)},
      {"prefill_tokens_per_s", if_fit(r.prefill.tokens_per_s)},
      {"decode", decode},
  };
}

nlohmann::json TraceJson(const model::Trace& trace) {
  nlohmann::json sections = nlohmann::json::array();
  for (const auto& group : trace.groups()) {
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

std::string WeightsDoNotFitText(const model::Capacity& capacity) {
  return fmt::format("weights do not fit: {:.1f} GiB needed per GPU, {:.1f} available",
                     BytesToGiB(capacity.weight_bytes), BytesToGiB(capacity.budget_bytes));
}

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
                   const std::vector<model::Trace>* traces) {
  KVSIM_CHECK(traces == nullptr || traces->size() == plans.size());
  nlohmann::json configurations = nlohmann::json::array();
  for (size_t i = 0; i < plans.size(); ++i) {
    configurations.push_back(PlanJson(plans[i]));
    if (traces != nullptr) configurations.back()["explain"] = TraceJson((*traces)[i]);
  }
  // Labels and names come from flags and files and need not be UTF-8; JSON must be, so invalid
  // bytes become U+FFFD instead of an exception.
  out << nlohmann::json{{"configurations", configurations}}.dump(
             2, ' ', false, nlohmann::json::error_handler_t::replace)
      << "\n";
}

void PrintPlanCsv(std::ostream& out, const std::vector<LabeledPlan>& plans) {
  out << "label,model,gpu,gpus,tp,pools,kv_dtype,weights,context_tokens,memory_fraction,"
         "weights_fit,does_not_fit,budget_bytes_per_gpu,weight_bytes_per_gpu,"
         "kv_bytes_per_token_per_gpu,";
  for (const KvPart& part : kKvParts) out << "kv_" << part.key << ",";
  out << "tokens_total,max_requests,prefill_tokens_per_s,concurrency,fits,tokens_per_s,"
         "ms_per_token,usd_per_million_tokens\n";
  for (const auto& plan : plans) {
    const PlanResult& r = plan.result;
    const model::Deployment& d = r.settings.deployment;
    const bool weights_fit = r.capacity.weights_fit;
    // Capacity and prefill: empty where the weights do not fit, like the decode figures.
    const std::string capacity =
        weights_fit ? fmt::format("{},{},{:.1f}", r.capacity.tokens_total,
                                  r.capacity.max_requests_total, r.prefill.tokens_per_s)
                    : ",,";
    std::string kv_parts;
    for (const KvPart& part : kKvParts) kv_parts += fmt::format("{},", r.kv.*part.bytes);
    for (const auto& e : r.decode) {
      out << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}{},{},{},",
                         CsvField(plan.label, true), CsvField(r.model.name), CsvField(r.gpu.name),
                         d.gpus, d.tp, d.pool_count(), KvFormatName(d.kv_format),
                         CsvField(r.weight_variant), d.context_tokens, d.memory_fraction,
                         weights_fit ? "true" : "false",
                         weights_fit ? "" : CsvField(WeightsDoNotFitText(r.capacity)),
                         r.capacity.budget_bytes, r.capacity.weight_bytes, r.kv.total(), kv_parts,
                         capacity, e.concurrency, e.fits ? "true" : "false");
      if (e.fits) {
        out << fmt::format("{:.1f},{:.3f},{:.4f}\n", e.tokens_per_s, e.ms_per_token,
                           e.usd_per_million_tokens);
      } else {
        out << ",,\n";
      }
    }
  }
}

void PrintExplanation(std::ostream& out, const std::string& label, const model::Trace& trace) {
  out << "explain" << (label.empty() ? "" : " " + label) << ":\n";
  for (const auto& group : trace.groups()) {
    out << "  " << group.title << "\n";
    for (const auto& term : group.terms) {
      out << "    " << term.quantity << " = " << term.formula << "\n";
      out << "      = " << term.value << "\n";
    }
  }
}

}  // namespace kvsim::cli
