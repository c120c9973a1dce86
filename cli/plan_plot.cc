// gnuplot output for plans.
#include "cli/plan_plot.h"

#include <fmt/format.h>
#include <string>
#include <vector>

#include "cli/gnuplot.h"
#include "cli/output_file.h"
#include "cli/text_table.h"

namespace kvsim::cli {
namespace {

// A field the title names when every plotted configuration shares it, and the legend when they
// differ. `keys`: the --compare fields that set it, so a label "gpu=b200" already names it.
struct PlotField {
  std::vector<const char*> keys;
  std::string (*value)(const model::PlanResult&);
};

const std::vector<PlotField>& PlotFields() {
  static const std::vector<PlotField> fields = {
      {{"model"}, [](const model::PlanResult& r) { return r.model.name; }},
      {{"gpu", "gpus"},
       [](const model::PlanResult& r) {
         return fmt::format("{} x {}", r.settings.deployment.gpus, r.gpu.name);
       }},
      {{"tp"},
       [](const model::PlanResult& r) { return fmt::format("tp {}", r.settings.deployment.tp); }},
      {{"kv-format"},
       [](const model::PlanResult& r) {
         return fmt::format("{} KV cache", KvFormatName(r.settings.deployment.kv_format));
       }},
      {{"weights"}, [](const model::PlanResult& r) { return r.weight_variant + " weights"; }},
      {{"context"},
       [](const model::PlanResult& r) {
         return fmt::format("{} tokens per request", Grouped(r.settings.deployment.context_tokens));
       }},
  };
  return fields;
}

std::vector<const LabeledPlan*> Plotted(const std::vector<LabeledPlan>& plans) {
  std::vector<const LabeledPlan*> plotted;
  for (const auto& plan : plans) {
    if (plan.result.planned()) plotted.push_back(&plan);
  }
  return plotted;
}

bool Shared(const PlotField& field, const std::vector<const LabeledPlan*>& plans) {
  for (const LabeledPlan* plan : plans) {
    if (field.value(plan->result) != field.value(plans.front()->result)) return false;
  }
  return true;
}

// Whether `label` names the field: "key=..." for one of its keys, or its value itself.
bool Names(const std::string& label, const PlotField& field, const model::PlanResult& r) {
  for (const char* key : field.keys) {
    if (label.find(std::string(key) + "=") != std::string::npos) return true;
  }
  return label.find(field.value(r)) != std::string::npos;
}

std::string Legend(const LabeledPlan& plan, const std::vector<const LabeledPlan*>& plotted) {
  const std::string label = plan.label.empty() ? plan.result.model.name : plan.label;
  std::string unnamed;
  for (const PlotField& field : PlotFields()) {
    if (Shared(field, plotted) || Names(label, field, plan.result)) continue;
    unnamed += (unnamed.empty() ? "" : ", ") + field.value(plan.result);
  }
  return unnamed.empty() ? label : label + " (" + unnamed + ")";
}

}  // namespace

std::string PlanPlotTitle(const std::vector<LabeledPlan>& plans) {
  const std::vector<const LabeledPlan*> plotted = Plotted(plans);
  if (plotted.empty()) return "decode tokens/s";
  // "kimi-k2.6 on 8 x h200-sxm, tp 8, ...": the model and GPUs as a phrase, the rest a list.
  std::string head;
  std::string rest;
  const std::vector<PlotField>& fields = PlotFields();
  for (size_t i = 0; i < fields.size(); ++i) {
    if (!Shared(fields[i], plotted)) continue;
    const std::string value = fields[i].value(plotted.front()->result);
    if (i == 0) {
      head = value;
    } else if (i == 1) {
      head += (head.empty() ? "" : " on ") + value;
    } else {
      rest += (rest.empty() ? "" : ", ") + value;
    }
  }
  const std::string shared = head.empty() || rest.empty() ? head + rest : head + ", " + rest;
  return shared.empty() ? "decode tokens/s" : shared + ": decode tokens/s";
}

Result<std::string> PlanPlotScript(const std::vector<LabeledPlan>& plans, const std::string& path,
                                   const std::string& title) {
  KVSIM_RETURN_IF_ERROR(CheckPlotPath(path));
  // Sixteen distinct colours, one per configuration (at most 16 are compared).
  static const char* const kColours[] = {
      "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
      "#bcbd22", "#17becf", "#000080", "#808000", "#008080", "#800000", "#ff1493", "#00ced1"};
  static_assert(sizeof(kColours) / sizeof(kColours[0]) >= kMaxConfigurations,
                "a colour for every configuration --compare can make");
  std::string script = GnuplotOutput(path, 900, 560) +
                       fmt::format(
                           "set title '{}'\nset xlabel 'concurrent requests'\n"
                           "set ylabel 'decode tokens/s (all GPUs)'\nset key top left\nset grid\n"
                           "set logscale x 2\nset yrange [0:*]\n",
                           GnuplotQuoted(title));
  std::string plot;
  std::string not_drawn;
  const std::vector<const LabeledPlan*> plotted = Plotted(plans);
  for (size_t i = 0; i < plans.size(); ++i) {
    const model::PlanResult& r = plans[i].result;
    if (!r.planned()) {
      not_drawn += fmt::format("{}{}: {}", not_drawn.empty() ? "" : "; ",
                               plans[i].label.empty() ? r.model.name : plans[i].label, r.shortfall);
      continue;
    }
    // Only the concurrencies that fit have a throughput; the rest are named in the legend.
    script += fmt::format("$d{} << EOD\n", i);
    int64_t first_oom = 0;
    for (const auto& e : r.decode) {
      if (e.fits) {
        script += fmt::format("{} {:.2f}\n", e.concurrency, e.tokens_per_s);
      } else if (first_oom == 0) {
        first_oom = e.concurrency;
      }
    }
    script += "EOD\n";
    const std::string legend =
        Legend(plans[i], plotted) +
        (first_oom > 0 ? fmt::format(" (out of memory at {})", first_oom) : std::string());
    plot += fmt::format("{}$d{} using 1:2 with linespoints lw 2 pt 7 lc rgb '{}' title '{}'",
                        plot.empty() ? "" : ", ", i, kColours[i % kMaxConfigurations],
                        GnuplotQuoted(legend));
  }
  if (plot.empty()) {
    return FailedPreconditionError("nothing to plot: no configuration could be planned");
  }
  if (!not_drawn.empty()) {
    script += fmt::format("set label 1 'not drawn: {}' at graph 0.02, graph 0.03 font ',9'\n",
                          GnuplotQuoted(not_drawn));
  }
  return script + "plot " + plot + "\n";
}

Status WritePlanPlot(const std::vector<LabeledPlan>& plans, const std::string& path,
                     const std::string& title) {
  KVSIM_RETURN_IF_ERROR(CheckPlotPath(path));
  const std::string temporary = TemporaryBeside(path);
  KVSIM_ASSIGN_OR_RETURN(const std::string script, PlanPlotScript(plans, temporary, title));
  KVSIM_RETURN_IF_ERROR(RunGnuplot(script, temporary));
  return MoveOutputIntoPlace("--plot", temporary, path);
}

}  // namespace kvsim::cli
