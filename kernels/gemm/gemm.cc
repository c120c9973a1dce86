// GEMM entry points: every check before anything runs, then the CPU or CUDA implementation.
#include "kernels/gemm/gemm.h"

#include <algorithm>
#include <string>
#include <utility>

#include "kernels/gemm/gemm_cpu.h"
#include "kernels/gemm/gemm_cuda.h"
#include "kernels/gemm/tile_layout.h"

namespace kvsim {
namespace {

// `name` must be a buffer of at least `bytes` bytes owned by `backend`.
Status CheckBuffer(const char* what, const char* name, const Backend& backend,
                   const DeviceBuffer* buffer, size_t bytes) {
  if (buffer == nullptr)
    return InvalidArgumentError(std::string(what) + ": " + name + " is missing");
  return CheckBufferRange(backend, *buffer, 0, bytes).WithContext(std::string(what) + ": " + name);
}

// The checks both kernels share: m, n, and the activation, bias and output buffers.
Status CheckCommon(const char* what, const Backend& backend, int m, int k, int n,
                   const DeviceBuffer* activations, const DeviceBuffer* bias,
                   const DeviceBuffer* output) {
  if (m < 1 || m > kGemmMaxM) {
    return OutOfRangeError(std::string(what) + ": m = " + std::to_string(m) +
                           " is out of range; supported: 1 to " + std::to_string(kGemmMaxM));
  }
  if (n % kGemmBlockColumns != 0) {
    return InvalidArgumentError(std::string(what) + ": n = " + std::to_string(n) +
                                " is not supported; n must be a multiple of 128");
  }
  const size_t bf16 = sizeof(uint16_t);
  KVSIM_RETURN_IF_ERROR(
      CheckBuffer(what, "activations", backend, activations, static_cast<size_t>(m) * k * bf16));
  KVSIM_RETURN_IF_ERROR(
      CheckBuffer(what, "output", backend, output, static_cast<size_t>(m) * n * bf16));
  if (bias != nullptr) {
    KVSIM_RETURN_IF_ERROR(CheckBuffer(what, "bias", backend, bias, static_cast<size_t>(n) * bf16));
  }
  return Status::Ok();
}

Status CheckInt4Weights(const char* what, const Backend& backend, const Int4Weights* weights) {
  if (weights == nullptr) return InvalidArgumentError(std::string(what) + ": weights are missing");
  KVSIM_RETURN_IF_ERROR(CheckInt4Shape(what, weights->k, weights->n, weights->config));
  const size_t elements = static_cast<size_t>(weights->k) * weights->n;
  const size_t group_entries = elements / weights->config.group_size;
  const size_t scale_bytes = weights->config.scale_type == ScaleType::kBf16 ? 2 : 4;
  KVSIM_RETURN_IF_ERROR(
      CheckBuffer(what, "weights.qweight", backend, &weights->qweight, elements / 2));
  KVSIM_RETURN_IF_ERROR(
      CheckBuffer(what, "weights.scales", backend, &weights->scales, group_entries * scale_bytes));
  if (weights->config.scheme == Int4Scheme::kAsymmetric) {
    KVSIM_RETURN_IF_ERROR(
        CheckBuffer(what, "weights.zeros", backend, &weights->zeros, group_entries / 2));
  }
  return Status::Ok();
}

Status CheckFp8Weights(const char* what, const Backend& backend, const Fp8Weights* weights) {
  if (weights == nullptr) return InvalidArgumentError(std::string(what) + ": weights are missing");
  KVSIM_RETURN_IF_ERROR(CheckFp8Shape(what, weights->k, weights->n));
  const size_t elements = static_cast<size_t>(weights->k) * weights->n;
  KVSIM_RETURN_IF_ERROR(CheckBuffer(what, "weights.codes", backend, &weights->codes, elements));
  return CheckBuffer(what, "weights.scales", backend, &weights->scales,
                     elements / (kFp8BlockK * kFp8BlockN) * sizeof(float));
}

// Runs `launch(operands)` on the CUDA backend with a workspace: the caller's, or one allocated
// for this call (released only after the kernel has finished with it).
template <typename Launch>
Status RunOnCuda(const char* what, Backend& backend, int m, int k, int n,
                 const DeviceBuffer& activations, const DeviceBuffer* bias, DeviceBuffer& output,
                 DeviceBuffer* workspace, const Launch& launch) {
  gemm_cuda::GemmOperands operands;
  operands.x = activations.as<uint16_t>();
  operands.bias = bias == nullptr ? nullptr : bias->as<uint16_t>();
  operands.out = output.as<uint16_t>();
  operands.m = m;
  operands.n = n;
  operands.k = k;
  operands.plan = PlanGemmLaunch(m, n, k);
  if (operands.plan.workspace_bytes == 0) return launch(operands);
  if (workspace != nullptr) {
    KVSIM_RETURN_IF_ERROR(
        CheckBuffer(what, "workspace", backend, workspace, operands.plan.workspace_bytes));
    operands.workspace = workspace->data();
    return launch(operands);
  }
  KVSIM_ASSIGN_OR_RETURN(DeviceBuffer scratch, AllocateGemmWorkspace(backend, m, n, k));
  operands.workspace = scratch.data();
  KVSIM_RETURN_IF_ERROR(launch(operands));
  return backend.Synchronize();
}

}  // namespace

Int4WeightsView Int4Weights::View() const {
  Int4WeightsView view;
  view.qweight = qweight.as<uint32_t>();
  view.scales = scales.data();
  view.zeros = config.scheme == Int4Scheme::kAsymmetric ? zeros.as<uint32_t>() : nullptr;
  view.k = k;
  view.n = n;
  view.group_size = config.group_size;
  view.scale_type = config.scale_type;
  return view;
}

Fp8WeightsView Fp8Weights::View() const {
  Fp8WeightsView view;
  view.codes = codes.as<uint8_t>();
  view.scales = scales.as<float>();
  view.k = k;
  view.n = n;
  return view;
}

Result<Int4Weights> UploadInt4Weights(Backend& backend, const Int4PackedWeights& packed) {
  Int4Weights weights;
  weights.k = packed.k;
  weights.n = packed.n;
  weights.config = packed.config;
  KVSIM_ASSIGN_OR_RETURN(weights.qweight, Upload(backend, packed.qweight));
  KVSIM_ASSIGN_OR_RETURN(weights.scales, Upload(backend, packed.ScaleBytes()));
  KVSIM_ASSIGN_OR_RETURN(weights.zeros, Upload(backend, packed.zeros));
  return Result<Int4Weights>(std::move(weights));
}

Result<Fp8Weights> UploadFp8Weights(Backend& backend, const Fp8PackedWeights& packed) {
  Fp8Weights weights;
  weights.k = packed.k;
  weights.n = packed.n;
  KVSIM_ASSIGN_OR_RETURN(weights.codes, Upload(backend, packed.codes));
  KVSIM_ASSIGN_OR_RETURN(weights.scales, Upload(backend, packed.scales));
  return Result<Fp8Weights>(std::move(weights));
}

Status Int4Gemm(Backend& backend, const Int4GemmArgs& args) {
  constexpr const char* kWhat = "int4_gemm";
  KVSIM_RETURN_IF_ERROR(CheckInt4Weights(kWhat, backend, args.weights));
  const int k = args.weights->k;
  const int n = args.weights->n;
  KVSIM_RETURN_IF_ERROR(
      CheckCommon(kWhat, backend, args.m, k, n, args.activations, args.bias, args.output));
  const Int4WeightsView view = args.weights->View();
  if (backend.kind() == BackendKind::kCpu) {
    Int4GemmCpu(args.activations->as<uint16_t>(), args.m, view,
                args.bias == nullptr ? nullptr : args.bias->as<uint16_t>(),
                args.output->as<uint16_t>());
    return Status::Ok();
  }
  return RunOnCuda(kWhat, backend, args.m, k, n, *args.activations, args.bias, *args.output,
                   args.workspace, [&](const gemm_cuda::GemmOperands& operands) {
                     return gemm_cuda::LaunchInt4Gemm(operands, view);
                   });
}

Status Fp8Gemm(Backend& backend, const Fp8GemmArgs& args) {
  constexpr const char* kWhat = "fp8_gemm";
  KVSIM_RETURN_IF_ERROR(CheckFp8Weights(kWhat, backend, args.weights));
  const int k = args.weights->k;
  const int n = args.weights->n;
  KVSIM_RETURN_IF_ERROR(
      CheckCommon(kWhat, backend, args.m, k, n, args.activations, args.bias, args.output));
  const Fp8WeightsView view = args.weights->View();
  if (backend.kind() == BackendKind::kCpu) {
    Fp8GemmCpu(args.activations->as<uint16_t>(), args.m, view,
               args.bias == nullptr ? nullptr : args.bias->as<uint16_t>(),
               args.output->as<uint16_t>());
    return Status::Ok();
  }
  return RunOnCuda(kWhat, backend, args.m, k, n, *args.activations, args.bias, *args.output,
                   args.workspace, [&](const gemm_cuda::GemmOperands& operands) {
                     return gemm_cuda::LaunchFp8Gemm(operands, view);
                   });
}

size_t GemmWorkspaceBytes(int m, int n, int k) { return PlanGemmLaunch(m, n, k).workspace_bytes; }

Result<DeviceBuffer> AllocateGemmWorkspace(Backend& backend, int m, int n, int k) {
  const size_t bytes = std::max<size_t>(GemmWorkspaceBytes(m, n, k), sizeof(int32_t));
  KVSIM_ASSIGN_OR_RETURN(DeviceBuffer workspace, backend.Allocate(bytes));
  KVSIM_RETURN_IF_ERROR(backend.Fill(workspace, 0));
  return Result<DeviceBuffer>(std::move(workspace));
}

}  // namespace kvsim
