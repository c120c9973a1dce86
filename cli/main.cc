// The kvsim command line: one subcommand per job. Exit codes: 0 ok, 1 a check failed or a
// request cannot be met, 2 bad usage or input.
#include <CLI/CLI.hpp>

#include <iostream>
#include <string>
#include <vector>

#include "base/seed.h"
#include "base/status.h"
#include "cli/demo.h"

namespace kvsim::cli {
namespace {

constexpr const char* kVersion = "0.1.0";

// A subcommand the project defines but this build does not provide yet.
struct PlannedCommand {
  const char* name;
  const char* summary;
};

constexpr PlannedCommand kPlannedCommands[] = {
    {"plan", "Capacity planning: tokens, concurrency, tokens/s and cost for a model on a GPU "
             "deployment, BF16 or FP8 KV, FP8 or INT4 weights"},
    {"run", "Run one seeded simulation scenario through the real kernels and the integrity check"},
    {"campaign", "Fault-injection campaign: many seeded scenarios with injected bookkeeping bugs"},
    {"replay", "Replay one failure from its reproduction line"},
    {"accuracy", "Numeric accuracy studies: FP8 KV cache and INT4 weights against BF16"},
};

int UsageError(const std::string& message) {
  std::cerr << "kvsim: " << message << "\nRun 'kvsim --help' for usage.\n";
  return 2;
}

int Main(int argc, char** argv) {
  CLI::App app{
      "kvsim: simulation and verification of FP8 KV caches, INT4 weights and KV-cache integrity "
      "checks,\nwith real CUDA kernels and a CPU backend that runs the same bit-level code."};
  app.name("kvsim");
  app.set_version_flag("--version", std::string("kvsim ") + kVersion);
  app.require_subcommand(0, 1);  // none given is reported below, after unknown arguments
  app.footer(
      "Exit codes: 0 ok; 1 a check failed or the request cannot be met; 2 bad usage or input.\n"
      "Run 'kvsim SUBCOMMAND --help' for a subcommand's options.");

  DemoOptions demo_options;
  std::string demo_seed = FormatSeed(demo_options.seed);
  CLI::App* demo = app.add_subcommand(
      "demo", "Run the main job on built-in defaults: the FP8 e4m3 and INT4 code tables and the "
              "round-trip error of each format on seeded samples");
  demo->add_option("--seed", demo_seed, "Seed of the samples, decimal or 0x-hex")
      ->capture_default_str();
  demo->add_option("--samples", demo_options.samples, "Samples per distribution, 1 to 16777216")
      ->capture_default_str();

  std::vector<CLI::App*> planned;
  for (const PlannedCommand& command : kPlannedCommands) {
    CLI::App* sub = app.add_subcommand(command.name, std::string(command.summary) +
                                                         " [not in this version yet]");
    sub->allow_extras();
    planned.push_back(sub);
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ExtrasError& e) {
    return UsageError(std::string(e.what()) +
                      " (subcommands: demo, plan, run, campaign, replay, accuracy)");
  } catch (const CLI::ParseError& e) {
    return UsageError(e.what());
  }

  for (CLI::App* sub : planned) {
    if (sub->parsed()) {
      return UsageError("'" + sub->get_name() +
                        "' is not in this version of kvsim yet; available now: demo");
    }
  }
  if (demo->parsed()) {
    const Result<uint64_t> seed = ParseSeed(demo_seed);
    if (!seed.ok()) return UsageError("--seed: " + seed.status().message());
    demo_options.seed = *seed;
    const Status status = RunDemo(demo_options, std::cout);
    if (!status.ok()) {
      std::cerr << "kvsim demo: " << status.message() << "\n";
      return ExitCodeFor(status);
    }
    return 0;
  }
  std::cerr << app.help();
  return UsageError("no subcommand given");
}

}  // namespace
}  // namespace kvsim::cli

int main(int argc, char** argv) { return kvsim::cli::Main(argc, argv); }
