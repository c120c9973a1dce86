// The kvsim command line: one subcommand per job. Exit codes: 0 ok, 1 a check failed or a
// request cannot be met, 2 bad usage or input, 3 an output not written (cli/exit_codes.h).
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "cli/accuracy_kv_command.h"
#include "cli/accuracy_weights_command.h"
#include "cli/campaign_command.h"
#include "cli/command.h"
#include "cli/demo.h"
#include "cli/exit_codes.h"
#include "cli/parse_error_text.h"
#include "cli/plan.h"
#include "cli/run_command.h"
#include "sim/report/provenance.h"

namespace kvsim::cli {
namespace {

std::vector<std::unique_ptr<Command>> AllCommands() {
  std::vector<std::unique_ptr<Command>> commands;
  commands.push_back(MakeDemoCommand());
  commands.push_back(MakePlanCommand());
  commands.push_back(MakeRunCommand());
  commands.push_back(MakeCampaignCommand());
  commands.push_back(MakeReplayCommand());
  std::vector<std::unique_ptr<Command>> accuracy;
  accuracy.push_back(MakeAccuracyKvCommand());
  accuracy.push_back(MakeAccuracyWeightsCommand());
  commands.push_back(MakeCommandGroup(
      "accuracy", "Numeric accuracy studies: FP8 KV cache and INT4 weights against BF16",
      std::move(accuracy)));
  return commands;
}

// The subcommands the parse reached, outermost first ("accuracy", "kv"). CLI11 hands an argument
// a subcommand does not know up to the top-level app, which reports it; this chain lets the
// message name the subcommand it was given to instead.
std::vector<const CLI::App*> ParsedChain(const CLI::App& app) {
  std::vector<const CLI::App*> chain;
  const CLI::App* current = &app;
  while (!current->get_subcommands().empty()) {
    current = current->get_subcommands().front();
    chain.push_back(current);
  }
  return chain;
}

// "kvsim" then ": accuracy: kv" or ": plan", as command errors are printed (CommandGroup puts the
// nested name in the message).
std::string MessagePrefix(const std::vector<const CLI::App*>& chain) {
  std::string prefix = "kvsim";
  for (size_t i = 0; i < chain.size(); ++i) prefix += (i == 0 ? " " : ": ") + chain[i]->get_name();
  return prefix;
}

// "kvsim accuracy kv": what to run with --help.
std::string CommandLine(const std::vector<const CLI::App*>& chain) {
  std::string line = "kvsim";
  for (const CLI::App* sub : chain) line += " " + sub->get_name();
  return line;
}

std::string SubcommandNames(const CLI::App& app) {
  std::string names;
  for (const CLI::App* sub : app.get_subcommands({})) {
    names += (names.empty() ? "" : ", ") + sub->get_name();
  }
  return names;
}

void PrintHelpPointer(const std::vector<const CLI::App*>& chain) {
  std::cerr << "Run '" << CommandLine(chain) << " --help' for usage.\n";
}

int UsageError(const std::vector<const CLI::App*>& chain, const std::string& message) {
  std::cerr << MessagePrefix(chain) << ": " << message << "\n";
  PrintHelpPointer(chain);
  return 2;
}

int Main(int argc, char** argv) {
  CLI::App app{
      "kvsim: simulation and verification of FP8 KV caches, INT4 weights and KV-cache integrity "
      "checks,\nwith real CUDA kernels and a CPU backend that runs the same bit-level code."};
  app.name("kvsim");
  app.set_version_flag("--version", std::string("kvsim ") + sim::kKvsimVersion);
  app.require_subcommand(0, 1);  // none given is reported below, after unknown arguments
  app.footer("Exit codes, by subcommand:\n" + ExitCodeTableMarkdown() +
             "\nRun 'kvsim SUBCOMMAND --help' for a subcommand's options.");

  std::vector<std::unique_ptr<Command>> commands = AllCommands();
  std::vector<CLI::App*> subcommands;
  for (const auto& command : commands) {
    CLI::App* sub = app.add_subcommand(command->name(), command->summary());
    command->Configure(*sub);
    subcommands.push_back(sub);
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
    const std::vector<const CLI::App*> chain = ParsedChain(app);
    const CLI::App& innermost = chain.empty() ? app : *chain.back();
    const std::string names = SubcommandNames(innermost);
    const std::string message = ParseErrorText(innermost, e.what());
    return UsageError(chain, names.empty() ? message : message + " (subcommands: " + names + ")");
  } catch (const CLI::ParseError& e) {
    const std::vector<const CLI::App*> chain = ParsedChain(app);
    return UsageError(chain, ParseErrorText(chain.empty() ? app : *chain.back(), e.what()));
  }

  const std::vector<const CLI::App*> chain = ParsedChain(app);
  // An option given an empty value ("--seed ''", "--json=") would otherwise mean its default.
  for (const CLI::App* level : chain) {
    for (const CLI::Option* option : level->get_options()) {
      if (option->count() == 0 || option->get_expected_min() == 0) continue;
      for (const std::string& value : option->results()) {
        if (!value.empty()) continue;
        const std::string name =
            option->get_name().empty() ? option->get_name(true, true) : option->get_name();
        return UsageError(chain, name + " must not be empty; give a value or leave the option out");
      }
    }
  }
  for (size_t i = 0; i < commands.size(); ++i) {
    if (!subcommands[i]->parsed()) continue;
    Status status = commands[i]->Run(std::cout);
    std::cout.flush();
    // Standard output redirected to a full disk (or a closed pipe) loses the printed result: an
    // output not written, as a file would be.
    if (!std::cout && status.ok()) {
      status = DataLossError("writing to standard output failed; the result printed there is lost");
    }
    if (status.ok()) return 0;
    std::cerr << "kvsim " << commands[i]->name() << ": " << status.message() << "\n";
    if (ExitCodeFor(status) == 2) PrintHelpPointer(chain);
    return ExitCodeFor(status);
  }
  std::cerr << app.help();
  return UsageError(chain, "no subcommand given");
}

}  // namespace
}  // namespace kvsim::cli

int main(int argc, char** argv) { return kvsim::cli::Main(argc, argv); }
