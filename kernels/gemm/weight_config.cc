// Names and checks of the weight configurations.
#include "kernels/gemm/weight_config.h"

#include <cmath>
#include <string>

namespace kvsim {

const char* ScaleTypeName(ScaleType type) { return type == ScaleType::kBf16 ? "bf16" : "fp32"; }

const char* Int4SchemeName(Int4Scheme scheme) {
  return scheme == Int4Scheme::kSymmetric ? "sym" : "asym";
}

Result<ScaleType> ParseScaleType(const std::string& text) {
  if (text == "bf16") return ScaleType::kBf16;
  if (text == "fp32") return ScaleType::kFp32;
  return InvalidArgumentError("unknown scale type '" + text + "'; allowed: bf16, fp32");
}

std::string Int4ConfigName(const Int4Config& config) {
  return "g" + std::to_string(config.group_size) + " " + Int4SchemeName(config.scheme) + " " +
         ScaleTypeName(config.scale_type);
}

Status CheckInt4GroupSize(int group_size) {
  for (int supported : kInt4GroupSizes) {
    if (group_size == supported) return Status::Ok();
  }
  return OutOfRangeError("group size " + std::to_string(group_size) +
                         " is not supported; supported: 32, 64, 128");
}

namespace {

Status CheckDim(const char* what, const char* name, int value) {
  if (value < 1 || value > kMaxWeightDim) {
    return OutOfRangeError(std::string(what) + ": " + name + " = " + std::to_string(value) +
                           " is out of range; allowed: 1 to " + std::to_string(kMaxWeightDim));
  }
  return Status::Ok();
}

}  // namespace

Status CheckInt4Shape(const char* what, int k, int n, const Int4Config& config) {
  KVSIM_RETURN_IF_ERROR(CheckInt4GroupSize(config.group_size).WithContext(what));
  KVSIM_RETURN_IF_ERROR(CheckDim(what, "k", k));
  KVSIM_RETURN_IF_ERROR(CheckDim(what, "n", n));
  if (k % config.group_size != 0) {
    return InvalidArgumentError(std::string(what) + ": k = " + std::to_string(k) +
                                " is not a multiple of the group size " +
                                std::to_string(config.group_size));
  }
  return Status::Ok();
}

Status CheckFp8Shape(const char* what, int k, int n) {
  KVSIM_RETURN_IF_ERROR(CheckDim(what, "k", k));
  KVSIM_RETURN_IF_ERROR(CheckDim(what, "n", n));
  if (k % kFp8BlockK != 0 || n % kFp8BlockN != 0) {
    return InvalidArgumentError(std::string(what) + ": [k, n] = [" + std::to_string(k) + ", " +
                                std::to_string(n) +
                                "] is not supported; both must be multiples of the 128 x 128 "
                                "scale block");
  }
  return Status::Ok();
}

Status CheckWeightValues(const char* what, const std::vector<float>& weights, int k, int n) {
  if (weights.size() != static_cast<size_t>(k) * n) {
    return InvalidArgumentError(std::string(what) + ": " + std::to_string(weights.size()) +
                                " weights given for a [" + std::to_string(k) + ", " +
                                std::to_string(n) + "] matrix");
  }
  for (size_t i = 0; i < weights.size(); ++i) {
    if (!std::isfinite(weights[i])) {
      return InvalidArgumentError(std::string(what) + ": weight (" + std::to_string(i / n) + ", " +
                                  std::to_string(i % n) + ") is not finite");
    }
  }
  return Status::Ok();
}

double Int4BytesPerWeight(const Int4Config& config) {
  const double scale_bytes = config.scale_type == ScaleType::kBf16 ? 2.0 : 4.0;
  const double zero_bytes = config.scheme == Int4Scheme::kAsymmetric ? 0.5 : 0.0;
  return 0.5 + (scale_bytes + zero_bytes) / config.group_size;
}

double Fp8BytesPerWeight() { return 1.0 + 4.0 / (kFp8BlockK * kFp8BlockN); }

}  // namespace kvsim
