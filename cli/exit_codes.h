// The exit codes of every subcommand, in one table: each command's --help footer, the top-level
// --help and the README are written from it, and tests/cli/exit_codes_cli_test.sh runs a case of
// each code of each command.
#pragma once

#include <string>
#include <vector>

namespace kvsim::cli {

// What codes 0 to 3 mean for one subcommand ("" where the command never exits with it).
struct ExitCodeRow {
  const char* command;  // "run", "campaign merge"
  const char* meanings[4];
};

// Every subcommand's row, in the order `kvsim --help` lists them.
const std::vector<ExitCodeRow>& ExitCodeTable();

// "Exit codes: 0 ...; 1 ...; 2 ...; 3 ..." for `command` (CHECK-fails on a name not in the table).
std::string ExitCodeFooter(const std::string& command);

// The whole table as Markdown, one row per command: the README carries it verbatim.
std::string ExitCodeTableMarkdown();

}  // namespace kvsim::cli
