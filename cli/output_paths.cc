#include "cli/output_paths.h"

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
