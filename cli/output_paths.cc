#include "cli/output_paths.h"

#include <unistd.h>

#include <filesystem>

namespace kvsim::cli {
namespace {

std::filesystem::path Resolved(const std::string& path) {
  std::error_code error;
  const std::filesystem::path resolved = std::filesystem::weakly_canonical(path, error);
  return error ? std::filesystem::absolute(path, error) : resolved;
}

}  // namespace

Status CheckOutputPaths(const std::vector<NamedPath>& outputs,
                        const std::vector<NamedPath>& inputs) {
  std::vector<std::pair<const NamedPath*, std::filesystem::path>> seen;
  for (const NamedPath& output : outputs) {
    if (output.path.empty()) continue;
    const std::filesystem::path resolved = Resolved(output.path);
    std::error_code error;
    const std::filesystem::path folder = resolved.parent_path();
    if (!folder.empty() && !std::filesystem::is_directory(folder, error)) {
      return InvalidArgumentError(output.option + " " + output.path + ": folder '" +
                                  folder.string() + "' does not exist");
    }
    // A file is written beside itself and renamed (output_file.h): its folder must be writable.
    // A device or pipe (/dev/stdout) is written in place.
    const bool special = std::filesystem::exists(resolved, error) &&
                         !std::filesystem::is_regular_file(resolved, error) &&
                         !std::filesystem::is_directory(resolved, error);
    if (!special && !folder.empty() && ::access(folder.c_str(), W_OK) != 0) {
      return InvalidArgumentError(output.option + " " + output.path + ": folder '" +
                                  folder.string() + "' is not writable");
    }
    if (std::filesystem::is_directory(resolved, error)) {
      return InvalidArgumentError(output.option + " " + output.path +
                                  ": a directory; give a file to write");
    }
    for (const auto& [other, other_resolved] : seen) {
      if (other_resolved == resolved) {
        return InvalidArgumentError(output.option + " " + output.path + ": the same file as " +
                                    other->option + "; give each output its own file");
      }
    }
    for (const NamedPath& input : inputs) {
      if (!input.path.empty() && Resolved(input.path) == resolved) {
        return InvalidArgumentError(output.option + " " + output.path + ": that is " +
                                    input.option + ", which it would overwrite");
      }
    }
    seen.emplace_back(&output, resolved);
  }
  return Status::Ok();
}

}  // namespace kvsim::cli
