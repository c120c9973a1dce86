// Config lookup by name.
#include "model/catalog.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "model/config_loader.h"

namespace kvsim::model {
namespace {

bool IsPath(const std::string& text) {
  const std::string suffix = ".yaml";
  return text.find('/') != std::string::npos ||
         (text.size() > suffix.size() &&
          text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0);
}

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return out.empty() ? "(none)" : out;
}

template <typename Spec>
Status CheckName(const Spec& spec, const std::string& name, const std::string& path) {
  if (spec.name == name) return Status::Ok();
  return InvalidArgumentError(
      fmt::format("{}: field 'name' is '{}' but the file is named '{}.yaml'; they must match", path,
                  spec.name, name));
}

}  // namespace

Result<Catalog> Catalog::Open(const std::string& root) {
  std::error_code error;
  if (!std::filesystem::is_directory(root, error)) {
    return NotFoundError(fmt::format(
        "configs folder '{}' not found; pass --configs DIR (the folder holding models/ and gpus/)",
        root));
  }
  return Catalog(root);
}

std::vector<std::string> Catalog::Names(const std::string& folder) const {
  std::vector<std::string> names;
  std::error_code error;
  const std::filesystem::path dir = std::filesystem::path(root_) / folder;
  for (std::filesystem::directory_iterator it(dir, error), end; !error && it != end;
       it.increment(error)) {
    if (it->path().extension() == ".yaml") names.push_back(it->path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> Catalog::ModelNames() const { return Names("models"); }
std::vector<std::string> Catalog::GpuNames() const { return Names("gpus"); }

Result<std::string> Catalog::Resolve(const std::string& folder, const std::string& kind,
                                     const std::string& name_or_path) const {
  if (IsPath(name_or_path)) return name_or_path;
  const std::string path = root_ + "/" + folder + "/" + name_or_path + ".yaml";
  std::error_code error;
  if (std::filesystem::is_regular_file(path, error)) return path;
  return NotFoundError(fmt::format("unknown {} '{}'; available: {} (in {}/{}/)", kind, name_or_path,
                                   Join(Names(folder)), root_, folder));
}

Result<ModelSpec> Catalog::LoadModel(const std::string& name_or_path) const {
  KVSIM_ASSIGN_OR_RETURN(const std::string path, Resolve("models", "model", name_or_path));
  KVSIM_ASSIGN_OR_RETURN(ModelSpec spec, LoadModelSpec(path));
  if (!IsPath(name_or_path)) KVSIM_RETURN_IF_ERROR(CheckName(spec, name_or_path, path));
  return spec;
}

Result<GpuSpec> Catalog::LoadGpu(const std::string& name_or_path) const {
  KVSIM_ASSIGN_OR_RETURN(const std::string path, Resolve("gpus", "GPU", name_or_path));
  KVSIM_ASSIGN_OR_RETURN(GpuSpec spec, LoadGpuSpec(path));
  if (!IsPath(name_or_path)) KVSIM_RETURN_IF_ERROR(CheckName(spec, name_or_path, path));
  return spec;
}

std::string Catalog::CalibrationPath(const std::string& name_or_path) const {
  if (IsPath(name_or_path)) return name_or_path;
  return root_ + "/calibration/" + name_or_path + ".yaml";
}

std::string Catalog::KernelProfilePath(const std::string& name_or_path) const {
  if (IsPath(name_or_path)) return name_or_path;
  return root_ + "/kernels/" + name_or_path + ".yaml";
}

std::string Catalog::MeasuredKernelTablePath(const std::string& gpu) const {
  return root_ + "/measured/" + gpu + ".yaml";
}

}  // namespace kvsim::model
