// `kvsim accuracy weights`: the weight accuracy study as a table or JSON.
#include "cli/accuracy_weights_command.h"
#include "cli/exit_codes.h"

#include <fmt/format.h>

#include <string>

#include "base/seed.h"
#include "cli/weight_accuracy_report.h"
#include "kernels/backend_factory.h"
#include "kernels/gemm/weight_accuracy.h"

namespace kvsim::cli {
namespace {

class AccuracyWeightsCommand : public Command {
 public:
  std::string name() const override { return "weights"; }
  std::string summary() const override {
    return "INT4 weights (group sizes 32, 64, 128; symmetric and asymmetric) and FP8 block "
           "weights against BF16: a layer's output error through the real kernels";
  }

  void Configure(CLI::App& app) override {
    app.footer(ExitCodeFooter("accuracy weights"));
    app.add_option("--seed", seed_text_, "Seed of weights and activations, decimal or 0x-hex")
        ->capture_default_str();
    app.add_option("--m", options_.m, "Activation rows (tokens), 1 to 4096")->capture_default_str();
    app.add_option("--k", options_.k, "Input features, a multiple of 128 up to 16384")
        ->capture_default_str();
    app.add_option("--n", options_.n, "Output features, a multiple of 128 up to 16384")
        ->capture_default_str();
    app.add_option("--scale-type", scale_type_text_, "INT4 scale type: bf16 or fp32")
        ->capture_default_str();
    app.add_flag("--clip", options_.clip_search, "Search a clipping range per INT4 group");
    app.add_option("--backend", backend_text_, "Where the kernels run: cpu, cuda or auto")
        ->capture_default_str();
    app.add_option("--kernel-path", path_text_,
                   "GEMM kernels: simple (the default) or fast (cp.async-pipelined, tensor-core "
                   "INT4/FP8 for m <= 16; larger m runs the simple kernels); the CPU runs the "
                   "chosen path's twin")
        ->capture_default_str();
    app.add_flag("--json", json_, "Print JSON instead of a table");
  }

  Status Run(std::ostream& out) override {
    KVSIM_ASSIGN_OR_RETURN(options_.seed, ParseSeed(seed_text_));
    KVSIM_ASSIGN_OR_RETURN(options_.int4_scale_type, ParseScaleType(scale_type_text_));
    KVSIM_ASSIGN_OR_RETURN(const BackendChoice choice, ParseBackendChoice(backend_text_));
    const Result<KernelPath> path = ParseKernelPath(path_text_);
    if (!path.ok()) return path.status().WithContext("--kernel-path");
    options_.path = *path;
    KVSIM_RETURN_IF_ERROR(CheckWeightAccuracyOptions(options_));
    std::string note;
    KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, CreateBackend(choice, &note));
    KVSIM_ASSIGN_OR_RETURN(const std::vector<WeightAccuracyRow> rows,
                           MeasureWeightAccuracy(*backend, options_));
    if (json_) {
      out << WeightAccuracyJson(options_, backend->description(), rows).dump(2) << "\n";
      return Status::Ok();
    }
    out << fmt::format(
        "Weight accuracy: x [{} x {}] (Gaussian) times weights [{} x {}], seed {}, kernels on "
        "{}, {} GEMM kernels.\nOutput error is against the FP64 product with the BF16 original "
        "weights; 'vs fp8' "
        "divides a row's\noutput error by FP8's on the same weights. INT4 scales {}{}; FP8 e4m3 "
        "with one fp32 scale per 128 x 128 block.\nbytes/weight counts scales and zero points. "
        "The bf16 row is the fp32 product rounded to bf16.\n\n",
        options_.m, options_.k, options_.k, options_.n, FormatSeed(options_.seed), note,
        KernelPathName(options_.path), ScaleTypeName(options_.int4_scale_type),
        options_.clip_search ? ", clipping searched per group" : "");
    PrintWeightAccuracyTable(out, rows);
    out << fmt::format(
        "\nReproduce: kvsim accuracy weights --seed {} --m {} --k {} --n {} --scale-type {}{} "
        "--backend {} --kernel-path {}\n",
        FormatSeed(options_.seed), options_.m, options_.k, options_.n,
        ScaleTypeName(options_.int4_scale_type), options_.clip_search ? " --clip" : "",
        BackendKindName(backend->kind()), KernelPathName(options_.path));
    return Status::Ok();
  }

 private:
  WeightAccuracyOptions options_;
  std::string seed_text_ = FormatSeed(0x5eed);
  std::string scale_type_text_ = "bf16";
  std::string backend_text_ = "cpu";
  std::string path_text_ = KernelPathName(kDefaultKernelPath);
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> MakeAccuracyWeightsCommand() {
  return std::make_unique<AccuracyWeightsCommand>();
}

}  // namespace kvsim::cli
