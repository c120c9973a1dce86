// The demo: each capability's short report on built-in defaults, in the order a user meets them.
#include "cli/demo.h"
#include "cli/exit_codes.h"

#include <fmt/format.h>

#include "base/seed.h"
#include "cli/campaign_demo.h"
#include "cli/configs_root.h"
#include "cli/format_report.h"
#include "cli/integrity_report.h"
#include "cli/kv_accuracy_report.h"
#include "cli/plan_demo.h"
#include "cli/sim_demo.h"
#include "cli/weight_accuracy_report.h"

namespace kvsim::cli {
namespace {

class DemoCommand : public Command {
 public:
  std::string name() const override { return "demo"; }
  std::string summary() const override {
    return "Run the main jobs on built-in defaults: capacity plans for Kimi K2.6 and GLM 5.2 on "
           "8xH200, the FP8 e4m3 and INT4 code tables, the round-trip error of each format on "
           "seeded samples, what an FP8 KV cache and INT4 weights cost through the kernels, and "
           "the KV-cache integrity check on one divergence per request, the simulator's "
           "page-reuse storm in kernel mode with and without planted bugs, and a short "
           "fault-injection campaign without and with the check";
  }

  void Configure(CLI::App& app) override {
    app.footer(ExitCodeFooter("demo"));
    app.add_option("--seed", seed_text_, "Seed of the samples, decimal or 0x-hex")
        ->capture_default_str();
    app.add_option("--samples", samples_, "Samples per distribution, 1 to 16777216")
        ->capture_default_str();
    app.add_option("--configs", configs_, "Folder with models/, gpus/, calibration/");
    app.add_option("--out", output_dir_, "Folder the plot is written to (default kvsim-out/)");
    app.add_option("--campaign-cases", campaign_cases_,
                   "Cases of the closing campaign, 1 to 10000000")
        ->capture_default_str();
  }

  Status Run(std::ostream& out) override {
    KVSIM_ASSIGN_OR_RETURN(const uint64_t seed, ParseSeed(seed_text_));
    if (samples_ < 1 || samples_ > (1 << 24)) {
      return OutOfRangeError(
          fmt::format("--samples {} is out of range; allowed: 1 to 16777216", samples_));
    }
    if (campaign_cases_ < 1 || campaign_cases_ > 10'000'000) {
      return OutOfRangeError(fmt::format(
          "--campaign-cases {} is out of range; allowed: 1 to 10000000", campaign_cases_));
    }
    out << "kvsim demo: capacity plans, the numeric formats of an FP8 KV cache and INT4 weights, "
           "and the KV-cache integrity check\n\n";
    // A plot that cannot be written fails the demo (exit 1, on stderr) after the rest has run.
    Status plot;
    KVSIM_RETURN_IF_ERROR(PrintPlanDemo(
        out, ConfigsRoot(configs_), output_dir_.empty() ? DefaultOutputDir() : output_dir_, &plot));
    out << "\n3. The numeric formats\n\n";
    PrintFp8E4M3Table(out);
    out << "\n";
    PrintInt4Table(out);
    out << "\n";
    PrintFormatRoundTrips(out, seed, samples_);
    out << "\n4. What an FP8 KV cache costs in attention\n\n";
    KVSIM_RETURN_IF_ERROR(PrintKvAccuracyDemo(out, seed));
    out << "\n5. INT4 and FP8 weights against BF16\n\n";
    KVSIM_RETURN_IF_ERROR(PrintWeightAccuracySummary(out, seed));
    out << "\n6. The KV-cache integrity check\n\n";
    KVSIM_RETURN_IF_ERROR(PrintIntegrityScenarios(out));
    out << "\n7. The simulator: a whole server through the kernels\n\n";
    KVSIM_RETURN_IF_ERROR(PrintSimulationDemo(out, ConfigsRoot(configs_)));
    out << "\n8. A fault-injection campaign: no check against the tag check\n\n";
    KVSIM_RETURN_IF_ERROR(PrintCampaignDemo(out, ConfigsRoot(configs_), seed, campaign_cases_));
    out << fmt::format("\nReproduce: kvsim demo --seed {} --samples {} --campaign-cases {}\n",
                       FormatSeed(seed), samples_, campaign_cases_);
    return plot.WithContext("the capacity plot was not written");
  }

 private:
  std::string seed_text_ = FormatSeed(0x5eed);
  int samples_ = 65536;
  int64_t campaign_cases_ = 30000;
  std::string configs_;
  std::string output_dir_;
};

}  // namespace

std::unique_ptr<Command> MakeDemoCommand() { return std::make_unique<DemoCommand>(); }

}  // namespace kvsim::cli
