// Command: one kvsim subcommand. Each lives in its own file and is listed once in main.cc.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "base/status.h"

namespace kvsim::cli {

class Command {
 public:
  virtual ~Command() = default;

  // The word users type ("plan") and the one-line summary `kvsim --help` shows.
  virtual std::string name() const = 0;
  virtual std::string summary() const = 0;

  // Adds this command's options (and nested subcommands) to its CLI11 subcommand.
  virtual void Configure(CLI::App& app) = 0;

  // Runs after a successful parse; writes results to `out`. The returned status decides the exit
  // code (ExitCodeFor) and its message is printed as "kvsim NAME: message".
  virtual Status Run(std::ostream& out) = 0;
};

// A command made of nested subcommands ("accuracy kv", "accuracy weights"); exactly one must be
// given.
std::unique_ptr<Command> MakeCommandGroup(std::string name, std::string summary,
                                          std::vector<std::unique_ptr<Command>> children);

}  // namespace kvsim::cli
