// `kvsim plan`: weights, KV capacity, concurrency, tokens/s and cost per configuration.
#include "cli/plan.h"
#include "cli/exit_codes.h"

#include <fmt/format.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/kv_format.h"
#include "cli/calibration_report.h"
#include "cli/configs_root.h"
#include "cli/operator_report.h"
#include "cli/output_file.h"
#include "cli/output_paths.h"
#include "cli/plan_need.h"
#include "cli/plan_plot.h"
#include "cli/plan_report.h"
#include "cli/plan_runner.h"
#include "model/catalog.h"
#include "model/plan_settings.h"

namespace kvsim::cli {
namespace {

struct FieldHelp {
  const char* field;
  std::string help;
};

// One flag per plan field; the same names work in --compare and in --deployment YAML.
const std::vector<FieldHelp>& FieldHelps() {
  static const std::vector<FieldHelp> help = {
      {"model", "Model name (configs/models/NAME.yaml) or a YAML path (default kimi-k2.6)"},
      {"gpu", "GPU name (configs/gpus/NAME.yaml) or a YAML path (default h200-sxm)"},
      {"gpus", "GPUs in the deployment (default 8)"},
      {"tp", "Tensor-parallel size; gpus / tp replicas (default 8)"},
      {"ep",
       "Expert-parallel size: 1 splits each routed expert across the tp GPUs (default); tp puts "
       "whole experts on each GPU, with an all-to-all dispatch and combine per MoE layer"},
      {"pools", "Independent KV pools (data-parallel attention); default gpus / tp"},
      {"mem-fraction", "Share of GPU memory for weights + KV cache (default 0.83)"},
      {"reserved-gib",
       "GiB per GPU subtracted after the fraction: budget = memory x fraction - reserved (default "
       "0)"},
      {"kv-format", "KV cache format: " + KvFormatNameList() + " (default bf16)"},
      {"page-size", "Tokens per KV page (default 64)"},
      {"weights", "Weight variant of the model (default: as published; see the model YAML)"},
      {"latent-projections",
       "MLA down-projections and DSA indexer: replicated (default) or sharded"},
      {"mtp", "Load the multi-token-prediction layers: on or off (default off)"},
      {"context", "Tokens each request holds, prompt plus output (default 21000)"},
      {"output",
       "Of those, the tokens each request generates: decode attends the prompt plus half of "
       "them, prefill the prompt, and the blended cost weighs prompt and output (default: not "
       "given, every request at its full length)"},
      {"usd-per-gpu-hour", "Price per GPU-hour for cost figures (default: the GPU YAML's)"},
  };
  return help;
}

// The deployments --need prints that meet the need, cheapest first.
constexpr size_t kNeedShown = 8;

class PlanCommand : public Command {
 public:
  std::string name() const override { return "plan"; }
  std::string summary() const override {
    return "Capacity planning: tokens, concurrency, tokens/s and cost for a model on a GPU "
           "deployment, BF16 or FP8 KV, FP8 or INT4 weights";
  }

  void Configure(CLI::App& app) override {
    app.footer(
        "Some --compare configurations that cannot be planned still exit 0: their columns, JSON\n"
        "objects and CSV rows say why, with the numbers. Bad input includes an invalid\n"
        "deployment, an option with no effect, an empty value, an option, field or YAML key\n"
        "given twice.\n" +
        ExitCodeFooter("plan"));
    text_options_.push_back(
        {app.add_option("--configs", configs_, "Folder with models/, gpus/, calibration/"),
         &configs_});
    CLI::Option* deployment = app.add_option_function<std::string>(
        "--deployment", [this](const std::string& path) { deployment_yaml_ = path; },
        "YAML file of field: value pairs (the flag names below, '-' or '_'), applied before "
        "flags; a relative model or GPU path in it is read from the file's folder");
    plan_only_.push_back(deployment);
    text_options_.push_back({deployment, &deployment_yaml_});
    for (const FieldHelp& entry : FieldHelps()) {
      const std::string field = entry.field;
      plan_only_.push_back(app.add_option_function<std::string>(
          "--" + field,
          [this, field](const std::string& value) {
            fields_.push_back({field, value});
          },
          entry.help));
    }
    plan_only_.push_back(
        app.add_option("--concurrency", concurrency_text_,
                       "Concurrent requests to estimate decode at, comma-separated")
            ->capture_default_str());
    CLI::Option* need = app.add_option(
        "--need", need_text_,
        "concurrency=N,ms-per-token=T[,ttft-ms=F]: the cheapest deployments that serve N "
        "requests of --context tokens at once at T ms per output token (and the first token "
        "within F ms: one prompt's prefill on an idle pool), searching the GPU kind, GPU count "
        "(every multiple of tp up to --max-gpus), tp (1 to 8), ep (1 or tp, for models with "
        "routed experts), KV dtype (bf16, fp8_e4m3) and weight variant, except the fields given; "
        "and why the others fail, each reason with its nearest miss (exit 1 when none meets it). "
        "With --json, every deployment searched as JSON");
    plan_only_.push_back(need);
    text_options_.push_back({need, &need_text_});
    plan_only_.push_back(
        app.add_option_function<std::string>(
               "--max-gpus", [this](const std::string& value) { max_gpus_text_ = value; },
               "The largest GPU count --need searches, an integer 1 to 1024 (default 64); it "
               "says where it stopped and whether a larger limit could find a cheaper answer")
            ->needs(need));
    plan_only_.push_back(
        app.add_option("--compare", compares_,
                       "FIELD=V1,V2,...: configurations side by side (repeatable; cross product, "
                       "at most 16); FIELD+FIELD=V1,... sets both fields to each value "
                       "(gpus+tp=2,4,8)"));
    text_options_.push_back(
        {app.add_option("--calibration", calibration_,
                        "Calibration of the step-time model (configs/calibration/NAME.yaml or a "
                        "path)")
             ->capture_default_str(),
         &calibration_});
    text_options_.push_back(
        {app.add_option("--kernel-table", kernel_table_,
                        "GEMM benchmark table for the INT4 expert speed (default: "
                        "configs/measured/GPU.yaml if present, else the published efficiencies "
                        "of configs/kernels/; 'none': the published efficiencies)"),
         &kernel_table_});
    text_options_.push_back(
        {app.add_option("--operator-profiles", operator_profiles_,
                        "A folder of operator times measured on a GPU, in Vidur's layout "
                        "(compute/GPU/ORG/MODEL/mlp.csv, network/GPU_TOPOLOGY/all_reduce.csv): "
                        "plans take the BF16 GEMM efficiencies and the all-reduce latency fitted "
                        "to them (the calibration then refits its figures), and every output "
                        "names the folder; with --validate-operators, the data to validate "
                        "against (default: Vidur's own, third_party/vidur_profiles)"),
         &operator_profiles_});
    CLI::Option* save_kernels = app.add_option(
        "--save-kernel-profile", save_kernel_profile_,
        "Write the kernel profile --operator-profiles fits into FILE (YAML, every figure with "
        "its source), for a calibration file's kernels: field and so for simulator scenarios");
    text_options_.push_back({save_kernels, &save_kernel_profile_});
    CLI::Option* operator_gpu =
        app.add_option("--operator-gpu", operator_gpu_,
                       "Whose profiles --operator-profiles fits when its folder holds several "
                       "GPU kinds (a kvsim GPU name; default: the planned --gpu)");
    text_options_.push_back({operator_gpu, &operator_gpu_});
    app.add_flag("--validate-operators", validate_operators_,
                 "Compare the step-time model operator by operator with measured GPU times "
                 "(Vidur's profiles, or --operator-profiles): per GPU, model and operator family "
                 "the rows compared, median and 90th-percentile relative error, the worst row "
                 "and where the model is systematically fast or slow; then four figures per GPU "
                 "refitted, with errors on held-out models and GPU counts and from A100 to H100 "
                 "(text, or JSON with --json)");
    app.add_flag("--calibration-report", calibration_report_,
                 "Print the calibration: fitted coefficients, and each published point with the "
                 "model's prediction and its error (as text, or with --json as JSON)");
    plan_only_.push_back(app.add_flag(
        "--explain", explain_,
        "Print every term of every number with its formula (with --json: an \"explain\" list in "
        "each configuration; not with --csv)"));
    app.add_flag("--json", json_, "Print JSON instead of tables");
    plan_only_.push_back(
        app.add_flag("--csv", csv_, "Print CSV (one row per configuration and concurrency)"));
    CLI::Option* plot = app.add_option(
        "--plot", plot_, "Draw tokens/s against concurrency into FILE.png or FILE.svg");
    plan_only_.push_back(plot);
    text_options_.push_back({plot, &plot_});
    for (const char* name :
         {"--concurrency", "--compare", "--calibration-report", "--explain", "--csv", "--plot"}) {
      need_excludes_.push_back(app.get_option(name));
    }
  }

  Status Run(std::ostream& out) override {
    KVSIM_RETURN_IF_ERROR(CheckCombinations());
    if (!plot_.empty()) KVSIM_RETURN_IF_ERROR(CheckPlotPath(plot_));
    if (!save_kernel_profile_.empty()) {
      KVSIM_RETURN_IF_ERROR(
          CheckOutputPaths({{"--save-kernel-profile", save_kernel_profile_}}, {{"--plot", plot_}}));
    }
    KVSIM_ASSIGN_OR_RETURN(const model::Catalog catalog,
                           model::Catalog::Open(ConfigsRoot(configs_)));
    if (validate_operators_) return RunValidation(out, catalog);
    model::PlanSettings base;
    base.kernel_table = kernel_table_;
    if (!deployment_yaml_.empty()) {
      KVSIM_RETURN_IF_ERROR(model::ApplyPlanYaml(base, deployment_yaml_));
    }
    for (const auto& [field, value] : fields_) {
      KVSIM_RETURN_IF_ERROR(model::SetPlanField(base, field, value).WithContext("--" + field));
    }
    KVSIM_ASSIGN_OR_RETURN(model::CalibrationSpec spec,
                           model::LoadCalibrationSpec(catalog.CalibrationPath(calibration_)));
    if (!operator_profiles_.empty()) {
      KVSIM_ASSIGN_OR_RETURN(const model::KernelProfile published,
                             model::LoadKernelProfile(catalog.KernelProfilePath(spec.kernels)));
      KVSIM_ASSIGN_OR_RETURN(const model::GpuSpec gpu,
                             catalog.LoadGpu(operator_gpu_.empty() ? base.gpu : operator_gpu_));
      KVSIM_ASSIGN_OR_RETURN(
          const FittedKernels fitted,
          KernelsFromOperatorProfiles(catalog, operator_profiles_, gpu.name, published));
      spec.kernels_override = fitted.kernels;
      spec.kernels_override_source = fitted.source;
      if (!save_kernel_profile_.empty()) {
        KVSIM_RETURN_IF_ERROR(WriteOutputFile("--save-kernel-profile", save_kernel_profile_,
                                              model::KernelProfileYaml(*fitted.kernels)));
      }
    }
    KVSIM_ASSIGN_OR_RETURN(const model::Calibration calibration, model::Calibrate(spec, catalog));
    if (calibration_report_) {
      KVSIM_ASSIGN_OR_RETURN(const std::vector<model::LeaveOneOutRow> leave_one_out,
                             model::LeaveOneOut(calibration.spec, catalog));
      if (json_) {
        PrintCalibrationJson(out, calibration, leave_one_out);
      } else {
        PrintCalibrationReport(out, calibration, leave_one_out);
      }
      return Status::Ok();
    }
    if (!need_text_.empty()) return RunNeed(out, catalog, calibration.params, base);
    KVSIM_ASSIGN_OR_RETURN(const std::vector<int64_t> concurrencies,
                           ParseConcurrencyList(concurrency_text_));
    KVSIM_ASSIGN_OR_RETURN(const std::vector<LabeledSettings> configurations,
                           ExpandCompare(base, compares_));
    std::vector<model::Derivation> derivations;
    KVSIM_ASSIGN_OR_RETURN(const std::vector<LabeledPlan> plans,
                           RunPlans(catalog, calibration.params, configurations, concurrencies,
                                    explain_ ? &derivations : nullptr));
    if (json_) {
      PrintPlanJson(out, plans, explain_ ? &derivations : nullptr);
    } else if (csv_) {
      PrintPlanCsv(out, plans);
    } else {
      PrintPlanText(out, plans);
      if (explain_) {
        for (size_t i = 0; i < plans.size(); ++i) {
          out << "\n";
          PrintExplanation(out, plans[i].label, derivations[i]);
        }
      }
    }
    if (!plot_.empty()) {
      KVSIM_RETURN_IF_ERROR(WritePlanPlot(plans, plot_, PlanPlotTitle(plans)));
      if (!json_ && !csv_) out << "\nplot written to " << plot_ << "\n";
    }
    return Status::Ok();
  }

 private:
  // --need: the search, its table, and exit 1 when no deployment meets the need.
  Status RunNeed(std::ostream& out, const model::Catalog& catalog,
                 const model::StepTimeParams& params, const model::PlanSettings& base) const {
    KVSIM_ASSIGN_OR_RETURN(const Need need, ParseNeed(need_text_));
    KVSIM_ASSIGN_OR_RETURN(const int max_gpus, MaxGpusFor(max_gpus_text_, base));
    KVSIM_ASSIGN_OR_RETURN(const NeedReport report,
                           SolveNeed(catalog, params, base, need, max_gpus));
    if (json_) {
      out << NeedJson(need, base, report).dump(2) << "\n";
    } else {
      PrintNeed(out, need, base, report, kNeedShown);
    }
    if (!report.meeting.empty()) return Status::Ok();
    return FailedPreconditionError(fmt::format(
        "no deployment of the {} searched meets --need {} (the reasons are {})",
        report.failing.size(), need_text_, json_ ? "in the JSON's failing list" : "above"));
  }

  // --validate-operators: the shipped model (the calibration's kernel profile and kernel
  // latency) against the profiles.
  Status RunValidation(std::ostream& out, const model::Catalog& catalog) const {
    KVSIM_ASSIGN_OR_RETURN(const model::Calibration calibration,
                           LoadCalibration(catalog, calibration_));
    KVSIM_ASSIGN_OR_RETURN(
        const model::OperatorValidation validation,
        ValidateOperatorProfiles(
            catalog, operator_profiles_.empty() ? VidurProfilesRoot() : operator_profiles_,
            *calibration.params.kernels, calibration.params.kernel_latency_s));
    if (json_) {
      out << OperatorValidationJson(validation).dump(2) << "\n";
    } else {
      PrintOperatorValidation(out, validation);
    }
    return Status::Ok();
  }

  // Options that would be silently dropped are refused instead, saying what goes together.
  Status CheckCombinations() const {
    for (const auto& [option, value] : text_options_) {
      if (option->count() > 0 && value->empty()) {
        return InvalidArgumentError(fmt::format("{} must not be empty; {}", option->get_name(),
                                                "give a value or leave the option out"));
      }
    }
    if (json_ && csv_) return InvalidArgumentError("give --json or --csv, not both");
    if (!need_text_.empty()) {
      for (const CLI::Option* option : need_excludes_) {
        if (option->count() == 0) continue;
        return InvalidArgumentError(fmt::format(
            "--need searches deployments and prints its own table; {} does not go with it",
            option->get_name()));
      }
    }
    if (calibration_report_) {
      for (const CLI::Option* option : plan_only_) {
        if (option->count() == 0) continue;
        return InvalidArgumentError(
            fmt::format("--calibration-report prints the calibration alone; {} does not go with "
                        "it (allowed with it: --calibration, --configs, --json)",
                        option->get_name()));
      }
    }
    if (validate_operators_) {
      for (const CLI::Option* option : plan_only_) {
        if (option->count() == 0) continue;
        return InvalidArgumentError(fmt::format(
            "--validate-operators prints the operator comparison alone; {} does not go with it "
            "(allowed with it: --operator-profiles, --calibration, --configs, --json)",
            option->get_name()));
      }
      if (calibration_report_) {
        return InvalidArgumentError("give --validate-operators or --calibration-report, not both");
      }
      if (!operator_gpu_.empty()) {
        return InvalidArgumentError(
            "--operator-gpu chooses the GPU kind a plan's figures are fitted on; "
            "--validate-operators fits every GPU kind of the folder, so it does not go with it");
      }
    }
    if (!save_kernel_profile_.empty() && (operator_profiles_.empty() || validate_operators_)) {
      return InvalidArgumentError(
          "--save-kernel-profile writes the profile --operator-profiles fits for a plan; give "
          "it with --operator-profiles and without --validate-operators");
    }
    if (!operator_gpu_.empty() && operator_profiles_.empty()) {
      return InvalidArgumentError("--operator-gpu needs --operator-profiles");
    }
    if (explain_ && csv_) {
      return InvalidArgumentError(
          "--explain does not go with --csv (a row per configuration and concurrency has no "
          "room for the terms); give --explain alone for text or with --json");
    }
    return Status::Ok();
  }

  std::string configs_;
  std::string deployment_yaml_;
  std::vector<std::pair<std::string, std::string>> fields_;
  std::string concurrency_text_ = "1,8,16,32,64";
  std::vector<std::string> compares_;
  std::string need_text_;
  std::optional<std::string> max_gpus_text_;  // --max-gpus, when given
  // Options that shape or print a plan of given configurations, which --need does not make.
  std::vector<const CLI::Option*> need_excludes_;
  std::string calibration_ = "kimi-k2.6-8xh200";
  std::string kernel_table_;
  bool calibration_report_ = false;
  bool validate_operators_ = false;
  std::string operator_profiles_;
  std::string operator_gpu_;
  std::string save_kernel_profile_;
  bool explain_ = false;
  bool json_ = false;
  bool csv_ = false;
  std::string plot_;
  // The options that shape a plan, which --calibration-report does not make.
  std::vector<const CLI::Option*> plan_only_;
  // Options whose value is a name or a path: given, they must not be empty.
  std::vector<std::pair<const CLI::Option*, const std::string*>> text_options_;
};

}  // namespace

std::unique_ptr<Command> MakePlanCommand() { return std::make_unique<PlanCommand>(); }

}  // namespace kvsim::cli
