// The demo's capacity plans.
#include "cli/plan_demo.h"

#include <fmt/format.h>

#include <filesystem>
#include <system_error>
#include <vector>

#include "cli/plan_plot.h"
#include "cli/plan_report.h"
#include "cli/plan_runner.h"
#include "model/catalog.h"

namespace kvsim::cli {
namespace {

constexpr const char* kConcurrency = "1,8,16,32,64";

Result<std::vector<LabeledPlan>> Compare(
    const model::Catalog& catalog, const model::Calibration& calibration,
    const std::vector<std::pair<std::string, std::string>>& fields, const std::string& compare) {
  model::PlanSettings base;
  for (const auto& [field, value] : fields) KVSIM_RETURN_IF_ERROR(SetPlanField(base, field, value));
  KVSIM_ASSIGN_OR_RETURN(const auto configurations, ExpandCompare(base, {compare}));
  KVSIM_ASSIGN_OR_RETURN(const auto concurrencies, ParseConcurrencyList(kConcurrency));
  return RunPlans(catalog, calibration.params, configurations, concurrencies, nullptr);
}

}  // namespace

Status PrintPlanDemo(std::ostream& out, const std::string& configs_root,
                     const std::string& output_dir, Status* plot) {
  KVSIM_ASSIGN_OR_RETURN(const model::Catalog catalog, model::Catalog::Open(configs_root));
  KVSIM_ASSIGN_OR_RETURN(const model::Calibration calibration,
                         LoadCalibration(catalog, "kimi-k2.6-8xh200"));

  out << "1. Kimi K2.6 on 8 x H200 (tp 8, one KV pool), requests of 21,000 tokens: BF16 or FP8 "
         "KV cache\n\n";
  KVSIM_ASSIGN_OR_RETURN(
      std::vector<LabeledPlan> kimi,
      Compare(catalog, calibration, {{"model", "kimi-k2.6"}}, "kv-format=bf16,fp8_e4m3"));
  PrintPlanText(out, kimi);
  out << fmt::format(
      "\n   Reproduce: kvsim plan --model kimi-k2.6 --gpu h200-sxm --gpus 8 --tp 8 --context "
      "21000 --compare kv-format=bf16,fp8_e4m3 --concurrency {}\n",
      kConcurrency);

  out << "\n2. GLM 5.2 on 8 x H200 (tp 8), FP8 KV cache: FP8 or INT4 weights\n\n";
  KVSIM_ASSIGN_OR_RETURN(
      std::vector<LabeledPlan> glm,
      Compare(catalog, calibration, {{"model", "glm-5.2"}, {"kv-format", "fp8_e4m3"}},
              "weights=fp8,int4"));
  PrintPlanText(out, glm);
  out << fmt::format(
      "\n   Reproduce: kvsim plan --model glm-5.2 --kv-format fp8_e4m3 --compare weights=fp8,int4 "
      "--concurrency {}\n",
      kConcurrency);
  out << "   Step times use the calibration fitted to published Kimi K2.6 figures "
         "(kvsim plan --calibration-report).\n";

  std::vector<LabeledPlan> all;
  for (auto* group : {&kimi, &glm}) {
    for (LabeledPlan& plan : *group) {
      plan.label = plan.result.model.name + " " + plan.label;
      all.push_back(plan);
    }
  }
  std::error_code error;
  std::filesystem::create_directories(output_dir, error);
  const std::string path = output_dir + "/plan-demo.svg";
  const Status plotted =
      error ? DataLossError(fmt::format("cannot create '{}': {}", output_dir, error.message()))
            : WritePlanPlot(all, path, "decode tokens/s on 8 x H200");
  if (plotted.ok()) out << "\n   Plot of decode tokens/s against concurrency: " << path << "\n";
  *plot = plotted;
  return Status::Ok();
}

}  // namespace kvsim::cli
