// Writing an output file without losing one: the text goes to a temporary file in the same
// folder, is flushed and synced, and only then renamed over the path, so that a full disk or a
// killed process never leaves half a file, nor clobbers the file an earlier run wrote there.
#pragma once

#include <string>

#include "base/status.h"

namespace kvsim::cli {

// Writes `text` to `path` as above. DataLoss (exit code 3) naming `option` ("--json") and the
// path when any step fails; the temporary file is removed then.
Status WriteOutputFile(const std::string& option, const std::string& path, const std::string& text);

// A temporary name beside `path` that keeps its extension ("run.svg" -> "run.svg.tmp12345.svg"),
// for writers that pick their format from it (gnuplot); MoveOutputIntoPlace renames it over
// `path`, DataLoss on failure.
std::string TemporaryBeside(const std::string& path);
Status MoveOutputIntoPlace(const std::string& option, const std::string& temporary,
                           const std::string& path);

}  // namespace kvsim::cli
