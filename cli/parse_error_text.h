// kvsim's own wording of the command-line parser's errors.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace kvsim::cli {

// The message for a CLI11 parse error `what` raised while parsing `app` (the innermost subcommand
// reached), in kvsim's words: an option given twice, an option without its value, a value of the
// wrong type, an unknown option with the option it most likely meant ("--kv_format": did you mean
// --kv-format?). A message it does not recognise is returned as it is.
std::string ParseErrorText(const CLI::App& app, const std::string& what);

}  // namespace kvsim::cli
