// Catalog: the configs folder (models/, gpus/, calibration/, kernels/, measured/) and lookup of its
// entries by name, with errors that list what is available.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "model/gpu_spec.h"
#include "model/model_spec.h"

namespace kvsim::model {

class Catalog {
 public:
  // `root` is the configs folder; it must exist.
  static Result<Catalog> Open(const std::string& root);

  // A name ("kimi-k2.6") is looked up as root/models/NAME.yaml and must match the file's `name`
  // field; anything with a '/' or ending in .yaml is read as a path.
  Result<ModelSpec> LoadModel(const std::string& name_or_path) const;
  Result<GpuSpec> LoadGpu(const std::string& name_or_path) const;
  // root/calibration/NAME.yaml, or a path.
  std::string CalibrationPath(const std::string& name_or_path) const;
  // root/kernels/NAME.yaml (a kernel profile), or a path.
  std::string KernelProfilePath(const std::string& name_or_path) const;
  // root/measured/GPU.yaml: where the GPU GEMM benchmark's kernel table for the GPU named `gpu`
  // goes once measured (it need not exist).
  std::string MeasuredKernelTablePath(const std::string& gpu) const;

  // The configs folder itself (files other than specs are named relative to it).
  const std::string& root() const { return root_; }

  // Names available, sorted.
  std::vector<std::string> ModelNames() const;
  std::vector<std::string> GpuNames() const;

 private:
  explicit Catalog(std::string root) : root_(std::move(root)) {}
  std::vector<std::string> Names(const std::string& folder) const;
  // The path for `name_or_path` in `folder`, or NotFound listing the names there.
  Result<std::string> Resolve(const std::string& folder, const std::string& kind,
                              const std::string& name_or_path) const;

  std::string root_;
};

}  // namespace kvsim::model
