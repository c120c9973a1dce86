// gnuplot output for plans.
#include "cli/plan_plot.h"

#include <fmt/format.h>
#include <string>
#include <vector>

#include "cli/gnuplot.h"
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
      {{"kv-dtype"},
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
    if (plan.result.capacity.weights_fit) plotted.push_back(&plan);
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
  std::string script = GnuplotOutput(path, 900, 560) +
                       fmt::format(
                           "set title '{}'\nset xlabel 'concurrent requests'\n"
                           "set ylabel 'decode tokens/s (all GPUs)'\nset key top left\nset grid\n"
                           "set logscale x 2\nset yrange [0:*]\n",
                           GnuplotQuoted(title));
  std::string plot;
  bool oom_titled = false;
  const std::vector<const LabeledPlan*> plotted = Plotted(plans);
  for (size_t i = 0; i < plans.size(); ++i) {
    // No point to draw: the table beside the plot says why.
    if (!plans[i].result.capacity.weights_fit) continue;
    script += fmt::format("$d{} << EOD\n", i);
    bool any_oom = false;
    for (const auto& e : plans[i].result.decode) {
      // Column 2: tokens/s where the batch fits; column 3: where it would run out of memory.
      const std::string value = fmt::format("{:.2f}", e.tokens_per_s);
      script +=
          fmt::format("{} {} {}\n", e.concurrency, e.fits ? value : "NaN", e.fits ? "NaN" : value);
      any_oom = any_oom || !e.fits;
    }
    script += "EOD\n";
    plot +=
        fmt::format("{}$d{} using 1:2 with linespoints lw 2 pt 7 lc {} title '{}'",
                    plot.empty() ? "" : ", ", i, i + 1, GnuplotQuoted(Legend(plans[i], plotted)));
    if (any_oom) {
      plot += fmt::format(", $d{} using 1:3 with points pt 2 ps 2.5 lw 2 lc rgb 'red' {}", i,
                          oom_titled ? "notitle" : "title 'out of memory'");
      oom_titled = true;
    }
  }
  if (plot.empty()) {
    return FailedPreconditionError("nothing to plot: no configuration's weights fit");
  }
  return script + "plot " + plot + "\n";
}

Status WritePlanPlot(const std::vector<LabeledPlan>& plans, const std::string& path,
                     const std::string& title) {
  KVSIM_ASSIGN_OR_RETURN(const std::string script, PlanPlotScript(plans, path, title));
  return RunGnuplot(script, path);
}

}  // namespace kvsim::cli
