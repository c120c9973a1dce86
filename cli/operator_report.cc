// The operator validation's tables and JSON, and plans from measured operator profiles.
#include "cli/operator_report.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <utility>

#include "cli/text_table.h"
#include "model/operator_profile.h"

namespace kvsim::cli {
namespace {

using model::OperatorFamily;
using model::OperatorFigures;
using model::OperatorValidation;
using model::ValidationLine;

// Vidur's commit the shipped profiles come from (third_party/vidur_profiles/README.md).
constexpr const char* kShippedSource = "microsoft/vidur 7d47513";

Result<std::map<std::string, model::GpuSpec>> GpusOf(const model::Catalog& catalog,
                                                     const model::OperatorProfiles& profiles) {
  std::set<std::string> names;
  for (const auto& p : profiles.compute) names.insert(p.gpu);
  for (const auto& p : profiles.all_reduce) names.insert(p.gpu);
  std::map<std::string, model::GpuSpec> gpus;
  for (const std::string& name : names) {
    Result<model::GpuSpec> gpu = catalog.LoadGpu(name);
    if (!gpu.ok()) {
      return gpu.status().WithContext(fmt::format(
          "{}: the profiles' GPU '{}' (name its folder after a kvsim GPU, configs/gpus/)",
          profiles.root, name));
    }
    gpus.emplace(name, std::move(gpu).value());
  }
  return gpus;
}

std::string Percent(double x) { return fmt::format("{:+.1f}%", 100 * x); }
std::string AbsPercent(double x) { return fmt::format("{:.1f}%", 100 * x); }

std::string FileOf(const OperatorValidation& v, const model::OperatorSample& s) {
  const auto& paths = s.family == OperatorFamily::kAllReduce ? v.all_reduce_paths : v.compute_paths;
  return static_cast<size_t>(s.profile) < paths.size() ? paths[static_cast<size_t>(s.profile)]
                                                       : std::string("?");
}

// "mlp_up_proj, 4096 tokens, tp 2 (line 812): 1.234 ms, model 1.456 ms".
std::string WorstText(const model::ErrorSummary& e) {
  const model::OperatorSample& s = e.worst_sample;
  const std::string what =
      s.family == OperatorFamily::kAllReduce
          ? fmt::format("{} B on {} GPUs", Grouped(static_cast<int64_t>(s.bytes)), s.gpus)
          : fmt::format("{}, {} tokens, tp {}", s.op, s.tokens, s.tp);
  return fmt::format("{} {} (line {}): {:.4g} ms measured, {:.4g} model", Percent(e.worst), what,
                     s.line, s.measured_s * 1e3, e.worst_predicted_s * 1e3);
}

void PrintLines(std::ostream& out, const std::vector<ValidationLine>& lines) {
  if (lines.empty()) {
    out << "  none: every GPU kind has one model and one GPU count, so nothing is held out\n";
    return;
  }
  TextTable table(
      {"GPU", "model", "family", "rows", "median", "p90", "signed", "worst row", "systematically"},
      {TextTable::Align::kLeft, TextTable::Align::kLeft, TextTable::Align::kLeft,
       TextTable::Align::kRight, TextTable::Align::kRight, TextTable::Align::kRight,
       TextTable::Align::kRight, TextTable::Align::kLeft, TextTable::Align::kLeft});
  for (const ValidationLine& line : lines) {
    const model::ErrorSummary& e = line.errors;
    table.AddRow({line.gpu, line.model.empty() ? "-" : line.model,
                  model::OperatorFamilyName(line.family), Grouped(e.rows), AbsPercent(e.median_abs),
                  AbsPercent(e.p90_abs), Percent(e.median_signed), WorstText(e),
                  e.bias.empty() ? "-" : e.bias});
  }
  table.Print(out);
}

nlohmann::json FiguresJson(const OperatorFigures& f) {
  return {{"gemm_memory_efficiency", f.gemm_memory_efficiency},
          {"gemm_compute_efficiency", f.gemm_compute_efficiency},
          {"kernel_fixed_us", f.kernel_fixed_us},
          {"all_reduce_latency_us", f.all_reduce_latency_us}};
}

nlohmann::json LinesJson(const OperatorValidation& v, const std::vector<ValidationLine>& lines) {
  nlohmann::json out = nlohmann::json::array();
  for (const ValidationLine& line : lines) {
    const model::ErrorSummary& e = line.errors;
    const model::OperatorSample& s = e.worst_sample;
    out.push_back({{"gpu", line.gpu},
                   {"model", line.model},
                   {"family", model::OperatorFamilyName(line.family)},
                   {"rows", e.rows},
                   {"median_abs_error", e.median_abs},
                   {"p90_abs_error", e.p90_abs},
                   {"median_error", e.median_signed},
                   {"worst",
                    {{"error", e.worst},
                     {"file", FileOf(v, s)},
                     {"line", s.line},
                     {"operator", s.op},
                     {"tokens", s.tokens},
                     {"tp", s.tp},
                     {"gpus", s.gpus},
                     {"bytes", s.bytes},
                     {"measured_ms", s.measured_s * 1e3},
                     {"model_ms", e.worst_predicted_s * 1e3}}},
                   {"systematically", e.bias}});
  }
  return out;
}

}  // namespace

Result<model::OperatorValidation> ValidateOperatorProfiles(const model::Catalog& catalog,
                                                           const std::string& root,
                                                           const model::KernelProfile& kernels,
                                                           double kernel_latency_s) {
  KVSIM_ASSIGN_OR_RETURN(const model::OperatorProfiles profiles, model::LoadOperatorProfiles(root));
  KVSIM_ASSIGN_OR_RETURN(const auto gpus, GpusOf(catalog, profiles));
  return model::ValidateOperators(profiles, gpus, kernels, kernel_latency_s);
}

void PrintOperatorValidation(std::ostream& out, const OperatorValidation& v) {
  out << fmt::format("operator profiles: {} ({} files, {} rows kvsim can express, content {})\n",
                     v.root, v.files, Grouped(v.samples), v.content_hash);
  out << "relative error = model / measured - 1: above 0 the model is slow, below it is fast\n\n";
  out << "figures (each GPU's own peaks times these; 'shipped': the kernel profile and the "
         "calibration's kernel latency; 'fitted': to all of the GPU's rows):\n";
  TextTable figures({"GPU", "set", "GEMM memory eff", "GEMM compute eff", "kernel fixed us",
                     "all-reduce latency us"});
  for (const auto& [gpu, f] : v.shipped) {
    for (const auto& [set, g] :
         {std::pair<const char*, OperatorFigures>{"shipped", f}, {"fitted", v.fitted.at(gpu)}}) {
      figures.AddRow({gpu, set, fmt::format("{:.3f}", g.gemm_memory_efficiency),
                      fmt::format("{:.3f}", g.gemm_compute_efficiency),
                      fmt::format("{:.2f}", g.kernel_fixed_us),
                      fmt::format("{:.1f}", g.all_reduce_latency_us)});
    }
  }
  figures.Print(out);
  out << "\nthe shipped model against every row:\n";
  PrintLines(out, v.shipped_lines);
  out << "\nheld out (each model predicted by figures fitted to the GPU's other models; each GPU "
         "count's all-reduces by the latency fitted to the other counts):\n";
  PrintLines(out, v.held_out_lines);
  if (!v.transfer_from.empty()) {
    out << fmt::format("\n{} figures fitted to all of {}'s rows, predicting {}:\n", v.transfer_from,
                       v.transfer_from, v.transfer_to);
    PrintLines(out, v.transfer_lines);
  }
}

nlohmann::json OperatorValidationJson(const OperatorValidation& v) {
  nlohmann::json figures = nlohmann::json::object();
  for (const auto& [gpu, f] : v.shipped) {
    figures[gpu] = {{"shipped", FiguresJson(f)}, {"fitted", FiguresJson(v.fitted.at(gpu))}};
  }
  nlohmann::json out = {{"profiles", v.root},
                        {"files", v.files},
                        {"rows", v.samples},
                        {"content_hash", v.content_hash},
                        {"figures", figures},
                        {"shipped", LinesJson(v, v.shipped_lines)},
                        {"held_out", LinesJson(v, v.held_out_lines)}};
  if (!v.transfer_from.empty()) {
    out["transfer"] = {{"from", v.transfer_from},
                       {"to", v.transfer_to},
                       {"lines", LinesJson(v, v.transfer_lines)}};
  }
  return out;
}

Result<FittedKernels> KernelsFromOperatorProfiles(const model::Catalog& catalog,
                                                  const std::string& root, const std::string& gpu,
                                                  const model::KernelProfile& kernels) {
  KVSIM_ASSIGN_OR_RETURN(const model::OperatorProfiles profiles, model::LoadOperatorProfiles(root));
  KVSIM_ASSIGN_OR_RETURN(const auto gpus, GpusOf(catalog, profiles));
  std::string kind;
  if (gpus.count(gpu) > 0) {
    kind = gpu;
  } else if (gpus.size() == 1) {
    kind = gpus.begin()->first;
  } else {
    std::string names;
    for (const auto& [name, spec] : gpus) names += (names.empty() ? "" : ", ") + name;
    return InvalidArgumentError(fmt::format(
        "{}: profiles of several GPU kinds ({}) and none is the planned {}; give a folder with "
        "one GPU kind's profiles",
        root, names, gpu));
  }
  const std::vector<model::OperatorSample> samples = model::OperatorSamples(profiles);
  std::vector<const model::OperatorSample*> subset;
  for (const auto& s : samples) {
    if (s.gpu == kind) subset.push_back(&s);
  }
  // The search starts from the shipped figures (the kernel latency from a typical 3 us: it
  // seeds the GEMM fit only; plans keep the calibration's).
  const OperatorFigures fitted =
      model::FitFigures(subset, gpus.at(kind), kernels, model::FiguresOf(kernels, 3e-6));
  int64_t gemms = 0;
  int64_t reduces = 0;
  for (const model::OperatorSample* s : subset) {
    if (s->family == OperatorFamily::kAllReduce) {
      ++reduces;
    } else if (s->family != OperatorFamily::kElementwise) {
      ++gemms;
    }
  }
  const std::string what = fmt::format("operator profiles {} ({} files, content {}; GPU {})", root,
                                       profiles.files, profiles.content_hash, kind);
  const std::string gemm_text =
      gemms > 0 ? fmt::format(
                      "BF16 GEMM memory efficiency {:.3f} and compute {:.3f} fitted to {} "
                      "GEMM rows",
                      fitted.gemm_memory_efficiency, fitted.gemm_compute_efficiency, gemms)
                : "BF16 GEMM efficiencies the kernel profile's (no GEMM rows)";
  const std::string reduce_text =
      reduces > 0 ? fmt::format("all-reduce latency {:.1f} us fitted to {} all-reduces",
                                fitted.all_reduce_latency_us, reduces)
                  : fmt::format(
                        "all-reduce latency {:.1f} us the kernel profile's (no "
                        "all-reduce rows)",
                        fitted.all_reduce_latency_us);
  FittedKernels out;
  model::KernelProfile profile = model::WithFigures(kernels, fitted, "fitted to " + what);
  profile.name = fmt::format("{}-fitted-{}", kernels.name, kind);
  out.kernels = std::make_shared<const model::KernelProfile>(std::move(profile));
  out.source = fmt::format("with {}, {}, from {}", gemm_text, reduce_text, what);
  return out;
}

}  // namespace kvsim::cli
