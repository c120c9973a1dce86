// The exit-code table.
#include "cli/exit_codes.h"

#include "base/check.h"

namespace kvsim::cli {
namespace {

// Code 3 is the same for every command: the result was computed and printed (or would have been),
// but a file it was asked to write, or standard output, could not be written.
constexpr const char* kOutputLost =
    "an output could not be written (disk full, no permission, gnuplot missing for --plot); the "
    "message names it, nothing half-written is left";

}  // namespace

const std::vector<ExitCodeRow>& ExitCodeTable() {
  static const std::vector<ExitCodeRow> table = {
      {"demo",
       {"every step ran", "a step failed (a bug in kvsim: the demo's checks pass by design)",
        "bad usage", kOutputLost}},
      {"plan",
       {"planned (with --need: a deployment meets it)",
        "no configuration can be planned (weights that do not fit, a context beyond the model's, "
        "a cache that holds no request), or with --need none meets it",
        "bad usage or config", kOutputLost}},
      {"accuracy kv",
       {"measured", "the chosen backend is unavailable (--backend cuda without a GPU)", "bad usage",
        kOutputLost}},
      {"accuracy weights",
       {"measured", "the chosen backend is unavailable (--backend cuda without a GPU)", "bad usage",
        kOutputLost}},
      {"run",
       {"ran, and found nothing wrong",
        "a finding (a silent corruption, an output outside its bound, a false alarm), a broken "
        "invariant, weights that do not fit, or an unavailable backend",
        "bad usage or scenario (file, line, field and what is allowed)", kOutputLost}},
      {"replay",
       {"reproduced: the state hash and every field of the report (with its findings, if it "
        "had any)",
        "did not reproduce (the first differing field is named)",
        "bad usage, or a report that is malformed, of another format version or edited",
        kOutputLost}},
      {"campaign",
       {"no surprise",
        "a surprise (a silent corruption the catalogue says is caught, a false "
        "alarm, an error, a crash); the table and --json are written first",
        "bad usage or base scenario", kOutputLost}},
      {"campaign merge",
       {"the campaign is whole and has no surprise", "surprises, or shards missing",
        "bad usage, or shards that are malformed, edited, of another campaign or contents, or "
        "given twice",
        kOutputLost}},
  };
  return table;
}

std::string ExitCodeFooter(const std::string& command) {
  for (const ExitCodeRow& row : ExitCodeTable()) {
    if (command != row.command) continue;
    std::string text = "Exit codes:";
    for (int code = 0; code < 4; ++code) {
      if (row.meanings[code][0] == '\0') continue;
      text += (code == 0 ? " " : "; ") + std::to_string(code) + " " + row.meanings[code];
    }
    return text + ".";
  }
  KVSIM_CHECK(false) << "no exit codes for '" << command << "'";
  return "";
}

std::string ExitCodeTableMarkdown() {
  std::string text = "| command | 0 | 1 | 2 | 3 |\n|---|---|---|---|---|\n";
  for (const ExitCodeRow& row : ExitCodeTable()) {
    text += std::string("| `") + row.command + "` |";
    for (int code = 0; code < 4; ++code) {
      // Code 3 means the same everywhere: said once below the table.
      text += std::string(" ") + (code == 3 ? "an output not written" : row.meanings[code]) + " |";
    }
    text += "\n";
  }
  return text + "\nCode 3, everywhere: " + kOutputLost + ".\n";
}

}  // namespace kvsim::cli
