// `kvsim accuracy kv`: for each distribution and scale choice, what FP8 (e4m3, e5m2; per-tensor,
// per-token-head, FlashMLA blocks) costs against a BF16 cache, measured through append_kv and
// decode attention on a backend.
#include "cli/accuracy_kv_command.h"
#include "cli/exit_codes.h"

#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/seed.h"
#include "cli/kv_accuracy_report.h"
#include "kernels/attention/kv_accuracy.h"
#include "kernels/backend_factory.h"

namespace kvsim::cli {
namespace {

// Seconds one request-token of one attention kind takes on the CPU backend: 16 requests of 2,048
// tokens, both kinds, took 166 s on a 2-core machine under load (2026-12-01). The basis of the
// estimate below, not a promise.
constexpr double kCpuSecondsPerRequestToken = 2.5e-3;
// A CPU run estimated longer than this is announced on stderr with its estimate and its progress.
constexpr double kAnnounceAfterS = 60;
// One estimated longer than this is refused unless --allow-hours is given.
constexpr double kRefuseAfterS = 3600;

// "82 seconds", "12 minutes", "2.9 hours".
std::string Duration(double seconds) {
  if (seconds < 120) return fmt::format("{:.0f} seconds", seconds);
  if (seconds < 3600) return fmt::format("{:.0f} minutes", seconds / 60);
  return fmt::format("{:.1f} hours", seconds / 3600);
}

class AccuracyKvCommand : public Command {
 public:
  std::string name() const override { return "kv"; }
  std::string summary() const override {
    return "FP8 KV cache (e4m3, e5m2; per-tensor, per-token-head and FlashMLA block scales) "
           "against BF16, through the real kernels";
  }

  void Configure(CLI::App& app) override {
    app.footer(ExitCodeFooter("accuracy kv"));
    app.add_option("--seed", seed_text_, "Seed of the K, V and query samples, decimal or 0x-hex")
        ->capture_default_str();
    app.add_option("--kind", kind_, "Attention kind: gqa, mla or both")->capture_default_str();
    app.add_option("--requests", requests_, "Requests (decode queries), 1 to 64")
        ->capture_default_str();
    app.add_option("--tokens", tokens_, "Cached tokens per request, 1 to 32768")
        ->capture_default_str();
    app.add_option("--backend", backend_text_, "Where the kernels run: auto, cpu or cuda")
        ->capture_default_str();
    app.add_flag("--json", json_, "Print JSON instead of tables");
    app.add_option("--kernel-path", path_text_,
                   "Decode attention kernels: simple (the default) or fast (tensor-core tiles, "
                   "cp.async pipeline); the CPU runs the chosen path's twin")
        ->capture_default_str();
    app.add_option(
           "--mla-products", mla_products_text_,
           "The fast MLA kernels' products (with --kernel-path fast): auto (bf16 until the FP8 "
           "kernel has passed its GPU test), bf16, or fp8 (queries and weights in e4m3 times the "
           "cache's codes, for e4m3 and e5m2 caches with per-tensor or per-token scales and for "
           "FlashMLA rows, whose rope stays bf16; bf16 products for the BF16 baseline)")
        ->capture_default_str();
    app.add_flag("--allow-hours", allow_hours_,
                 "Run a size estimated to take over an hour on the CPU backend (refused without "
                 "it; over a minute, the estimate and progress go to stderr)");
  }

  Status Run(std::ostream& out) override {
    KVSIM_ASSIGN_OR_RETURN(const uint64_t seed, ParseSeed(seed_text_));
    KVSIM_ASSIGN_OR_RETURN(const BackendChoice choice, ParseBackendChoice(backend_text_));
    const Result<KernelPath> path = ParseKernelPath(path_text_);
    if (!path.ok()) return path.status().WithContext("--kernel-path");
    const Result<FastMlaMath> mla_products = ParseFastMlaMath(mla_products_text_);
    if (!mla_products.ok()) return mla_products.status().WithContext("--mla-products");
    if (*mla_products != FastMlaMath::kAuto && *path != KernelPath::kFast) {
      return InvalidArgumentError("--mla-products " + mla_products_text_ +
                                  " applies to the fast kernels; give --kernel-path fast");
    }
    std::vector<AttentionKind> kinds;
    if (kind_ == "gqa" || kind_ == "both") kinds.push_back(AttentionKind::kGqa);
    if (kind_ == "mla" || kind_ == "both") kinds.push_back(AttentionKind::kMla);
    if (kinds.empty()) {
      return InvalidArgumentError("--kind '" + kind_ + "' is not known; allowed: gqa, mla, both");
    }
    if (requests_ < 1 || requests_ > 64) {
      return OutOfRangeError(
          fmt::format("--requests {} is out of range; allowed: 1 to 64", requests_));
    }
    if (tokens_ < 1 || tokens_ > 32768) {
      return OutOfRangeError(
          fmt::format("--tokens {} is out of range; allowed: 1 to 32768", tokens_));
    }
    std::vector<KvAccuracyConfig> configs;
    for (AttentionKind kind : kinds) {
      KvAccuracyConfig config;
      config.kind = kind;
      config.requests = requests_;
      config.tokens = tokens_;
      config.seed = seed;
      config.path = *path;
      config.mla_products = *mla_products;
      KVSIM_RETURN_IF_ERROR(ValidateKvAccuracyConfig(config));
      configs.push_back(config);
    }
    std::string note;
    KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, CreateBackend(choice, &note));
    const double estimate_s =
        backend->kind() == BackendKind::kCpu
            ? kCpuSecondsPerRequestToken * requests_ * tokens_ * static_cast<double>(configs.size())
            : 0;
    const std::string basis = fmt::format(
        "on the CPU backend ({} requests x {} tokens x {} attention kinds at about {} ms each, "
        "as a 2-core machine took)",
        requests_, tokens_, configs.size(), kCpuSecondsPerRequestToken * 1e3);
    if (estimate_s > kRefuseAfterS && !allow_hours_) {
      return OutOfRangeError(fmt::format(
          "this size would take about {} {}; give fewer --requests or --tokens, or --allow-hours "
          "to run it anyway",
          Duration(estimate_s), basis));
    }
    const bool announce = estimate_s > kAnnounceAfterS;
    if (announce)
      std::cerr << fmt::format("kvsim accuracy kv: about {} {}\n", Duration(estimate_s), basis);
    nlohmann::json studies = nlohmann::json::array();
    if (!json_) {
      out << "FP8 KV cache against BF16: the same K, V and queries through a BF16 cache and each "
             "FP8 format,\nwith the real append_kv and decode attention kernels (backend: "
          << note << "; " << KernelPathName(*path) << " decode kernels"
          << (*mla_products == FastMlaMath::kAuto
                  ? std::string()
                  : ", MLA " + FastMlaMathName(*mla_products) + " products")
          << ").\n"
          << "rel rms = ||o_fp8 - o_bf16|| / ||o_bf16|| over every output; top-1 = requests x "
             "heads whose argmax of a\nrandom 1024-row projection of the output agrees; "
             "saturated = stored values the format clamps (they\nround beyond its largest finite "
             "value). Scales: calibrated = absmax / largest finite, per tensor;\n1.0 = the "
             "uncalibrated default; inverse = largest finite / absmax (a scale/descale mix-up);\n"
             "dynamic = per token and head; block pow2 = FlashMLA's power-of-two scale per 128 "
             "values.\n";
    }
    for (size_t i = 0; i < configs.size(); ++i) {
      const KvAccuracyConfig& config = configs[i];
      if (announce) {
        std::cerr << fmt::format("kvsim accuracy kv: study {} of {}: {}\n", i + 1, configs.size(),
                                 config.kind == AttentionKind::kGqa ? "gqa" : "mla");
      }
      KVSIM_ASSIGN_OR_RETURN(const std::vector<KvAccuracyRow> rows,
                             MeasureKvAccuracy(*backend, config));
      if (json_) {
        nlohmann::json study = KvAccuracyJson(config, rows);
        study["backend"] = note;
        studies.push_back(std::move(study));
        continue;
      }
      out << "\n" << DescribeKvAccuracyConfig(config) << "\n\n";
      PrintKvAccuracyTable(out, rows);
    }
    if (json_) {
      out << studies.dump(2) << "\n";
      return Status::Ok();
    }
    out << fmt::format(
        "\nReproduce: kvsim accuracy kv --seed {} --kind {} --requests {} --tokens {}"
        " --backend {} --kernel-path {} --mla-products {}\n",
        FormatSeed(seed), kind_, requests_, tokens_, backend_text_, KernelPathName(*path),
        FastMlaMathName(*mla_products));
    return Status::Ok();
  }

 private:
  std::string seed_text_ = FormatSeed(0x5eed);
  std::string kind_ = "both";
  int requests_ = 4;
  int tokens_ = 512;
  std::string backend_text_ = "cpu";
  std::string path_text_ = KernelPathName(kDefaultKernelPath);
  std::string mla_products_text_ = "auto";
  bool json_ = false;
  bool allow_hours_ = false;
};

}  // namespace

std::unique_ptr<Command> MakeAccuracyKvCommand() { return std::make_unique<AccuracyKvCommand>(); }

}  // namespace kvsim::cli
