// GEMM entry points: every check before anything runs, then the CPU or CUDA implementation.
#include "kernels/gemm/gemm.h"

#include <algorithm>
#include <string>
#include <utility>

#include "kernels/gemm/fast_gemm_cpu.h"
#include "kernels/gemm/fast_gemm_grid.h"
#include "kernels/gemm/gemm_cpu.h"
#include "kernels/gemm/gemm_cuda.h"
#include "kernels/gemm/tile_layout.h"

namespace kvsim {
namespace {

std::string ToHex(uintptr_t value) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  do {
    text.insert(text.begin(), kDigits[value % 16]);
    value /= 16;
  } while (value != 0);
  return text;
}

// `name` must be a buffer of at least `bytes` bytes owned by `backend`.
Status CheckBuffer(const char* what, const char* name, const Backend& backend,
                   const DeviceBuffer* buffer, size_t bytes) {
  if (buffer == nullptr)
    return InvalidArgumentError(std::string(what) + ": " + name + " is missing");
  return CheckBufferRange(backend, *buffer, 0, bytes).WithContext(std::string(what) + ": " + name);
}

// `name`'s first byte must sit at a multiple of `alignment` bytes: the kernels read it `alignment`
// bytes at a time (cp.async and 16-byte vector loads fault on a misaligned address).
Status CheckAlignment(const char* what, const char* name, const DeviceBuffer* buffer,
                      size_t alignment) {
  if (buffer == nullptr) return Status::Ok();
  const auto address = reinterpret_cast<uintptr_t>(buffer->data());
  if (address % alignment == 0) return Status::Ok();
  return InvalidArgumentError(std::string(what) + ": " + name + " is not " +
                              std::to_string(alignment) + "-byte aligned (address ends in 0x" +
                              ToHex(address % 256) + "); the kernels read it " +
                              std::to_string(alignment) + " bytes at a time");
}

// m in 1..kGemmMaxM and n a multiple of 128 (the weights' own checks bound n).
Status CheckRowsAndColumns(const char* what, int m, int n) {
  if (m < 1 || m > kGemmMaxM) {
    return OutOfRangeError(std::string(what) + ": m = " + std::to_string(m) +
                           " is out of range; supported: 1 to " + std::to_string(kGemmMaxM));
  }
  if (n % kGemmBlockColumns != 0) {
    return InvalidArgumentError(std::string(what) + ": n = " + std::to_string(n) +
                                " is not supported; n must be a multiple of 128");
  }
  return Status::Ok();
}

// The checks both kernels share: m, n, and the activation, bias and output buffers.
Status CheckCommon(const char* what, const Backend& backend, int m, int k, int n,
                   const DeviceBuffer* activations, const DeviceBuffer* bias,
                   const DeviceBuffer* output) {
  KVSIM_RETURN_IF_ERROR(CheckRowsAndColumns(what, m, n));
  const size_t bf16 = sizeof(uint16_t);
  KVSIM_RETURN_IF_ERROR(
      CheckBuffer(what, "activations", backend, activations, static_cast<size_t>(m) * k * bf16));
  KVSIM_RETURN_IF_ERROR(
      CheckBuffer(what, "output", backend, output, static_cast<size_t>(m) * n * bf16));
  if (bias != nullptr) {
    KVSIM_RETURN_IF_ERROR(CheckBuffer(what, "bias", backend, bias, static_cast<size_t>(n) * bf16));
  }
  KVSIM_RETURN_IF_ERROR(CheckAlignment(what, "activations", activations, 16));
  KVSIM_RETURN_IF_ERROR(CheckAlignment(what, "output", output, 4));
  return CheckAlignment(what, "bias", bias, 2);
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
  KVSIM_RETURN_IF_ERROR(CheckAlignment(what, "weights.qweight", &weights->qweight, 16));
  KVSIM_RETURN_IF_ERROR(CheckAlignment(what, "weights.scales", &weights->scales, 16));
  if (weights->config.scheme == Int4Scheme::kAsymmetric) {
    KVSIM_RETURN_IF_ERROR(
        CheckBuffer(what, "weights.zeros", backend, &weights->zeros, group_entries / 2));
    KVSIM_RETURN_IF_ERROR(CheckAlignment(what, "weights.zeros", &weights->zeros, 16));
  }
  return Status::Ok();
}

Status CheckFp8Weights(const char* what, const Backend& backend, const Fp8Weights* weights) {
  if (weights == nullptr) return InvalidArgumentError(std::string(what) + ": weights are missing");
  KVSIM_RETURN_IF_ERROR(CheckFp8Shape(what, weights->k, weights->n));
  const size_t elements = static_cast<size_t>(weights->k) * weights->n;
  KVSIM_RETURN_IF_ERROR(CheckBuffer(what, "weights.codes", backend, &weights->codes, elements));
  KVSIM_RETURN_IF_ERROR(CheckBuffer(what, "weights.scales", backend, &weights->scales,
                                    elements / (kFp8BlockK * kFp8BlockN) * sizeof(float)));
  KVSIM_RETURN_IF_ERROR(CheckAlignment(what, "weights.codes", &weights->codes, 16));
  return CheckAlignment(what, "weights.scales", &weights->scales, 4);
}

// Checks the call (the weights' own checks in `weights_check`), then runs the chosen path: on the
// CPU backend `cpu` or `fast_cpu(x, m, view, bias, out)`, on the CUDA backend `launch` or
// `fast_launch(operands, view)`, with a workspace: the caller's, or one allocated for this call
// and released only after the device has finished.
template <typename Args, typename CpuKernel, typename CudaLaunch>
Status RunGemm(const char* what, Backend& backend, const Args& args, const Status& weights_check,
               const CpuKernel& cpu, const CpuKernel& fast_cpu, const CudaLaunch& launch,
               const CudaLaunch& fast_launch) {
  KVSIM_RETURN_IF_ERROR(weights_check);
  const int m = args.m;
  const int k = args.weights->k;
  const int n = args.weights->n;
  KVSIM_RETURN_IF_ERROR(
      CheckCommon(what, backend, m, k, n, args.activations, args.bias, args.output));
  const auto view = args.weights->View();
  const uint16_t* bias = args.bias == nullptr ? nullptr : args.bias->template as<uint16_t>();
  // The fast path covers m <= 16; larger m runs the simple path on either request.
  const bool fast = args.launch.path == KernelPath::kFast && m <= kFastGemmMaxM;
  if (backend.kind() == BackendKind::kCpu) {
    (fast ? fast_cpu : cpu)(args.activations->template as<uint16_t>(), m, view, bias,
                            args.output->template as<uint16_t>());
    return Status::Ok();
  }
  gemm_cuda::GemmOperands operands;
  operands.x = args.activations->template as<uint16_t>();
  operands.bias = bias;
  operands.out = args.output->template as<uint16_t>();
  operands.m = m;
  operands.n = n;
  operands.k = k;
  operands.grid = ChooseGemmGrid(m, n, k);
  operands.launch = args.launch;
  const CudaLaunch& run = fast ? fast_launch : launch;
  const size_t workspace_bytes = GemmWorkspaceBytes(m, n, k, args.launch.path);
  if (workspace_bytes == 0) return run(operands, view);
  if (args.workspace != nullptr) {
    KVSIM_RETURN_IF_ERROR(CheckBuffer(what, "workspace", backend, args.workspace, workspace_bytes));
    KVSIM_RETURN_IF_ERROR(CheckAlignment(what, "workspace", args.workspace, 16));
    operands.workspace = args.workspace->data();
    return run(operands, view);
  }
  KVSIM_ASSIGN_OR_RETURN(DeviceBuffer scratch,
                         AllocateGemmWorkspace(backend, m, n, k, args.launch.path));
  operands.workspace = scratch.data();
  KVSIM_RETURN_IF_ERROR(run(operands, view));
  return backend.Synchronize();
}

}  // namespace

Int4WeightsView Int4Weights::View() const {
  return MakeInt4WeightsView(qweight.as<uint32_t>(), scales.data(), zeros.as<uint32_t>(), k, n,
                             config);
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
  return RunGemm(kWhat, backend, args, CheckInt4Weights(kWhat, backend, args.weights), Int4GemmCpu,
                 FastInt4GemmCpu, gemm_cuda::LaunchInt4Gemm, gemm_cuda::LaunchFastInt4Gemm);
}

Status Fp8Gemm(Backend& backend, const Fp8GemmArgs& args) {
  constexpr const char* kWhat = "fp8_gemm";
  return RunGemm(kWhat, backend, args, CheckFp8Weights(kWhat, backend, args.weights), Fp8GemmCpu,
                 FastFp8GemmCpu, gemm_cuda::LaunchFp8Gemm, gemm_cuda::LaunchFastFp8Gemm);
}

size_t GemmWorkspaceBytes(int m, int n, int k, KernelPath path) {
  if (path == KernelPath::kFast && m <= kFastGemmMaxM)
    return ChooseFastGemmGrid(m, n, k).workspace_bytes;
  return ChooseGemmGrid(m, n, k).workspace_bytes;
}

Result<DeviceBuffer> AllocateGemmWorkspace(Backend& backend, int m, int n, int k, KernelPath path) {
  constexpr const char* kWhat = "gemm workspace";
  KVSIM_RETURN_IF_ERROR(CheckRowsAndColumns(kWhat, m, n));
  if (n < 1 || n > kMaxWeightDim || k < 1 || k > kMaxWeightDim || k % kTileK != 0) {
    return InvalidArgumentError(std::string(kWhat) + ": [k, n] = [" + std::to_string(k) + ", " +
                                std::to_string(n) +
                                "] is not supported; k must be a multiple of 16 and n of 128, "
                                "both from 1 to " +
                                std::to_string(kMaxWeightDim));
  }
  const size_t bytes = std::max<size_t>(GemmWorkspaceBytes(m, n, k, path), 16);
  KVSIM_ASSIGN_OR_RETURN(DeviceBuffer workspace, backend.Allocate(bytes));
  KVSIM_RETURN_IF_ERROR(backend.Fill(workspace, 0));
  return Result<DeviceBuffer>(std::move(workspace));
}

}  // namespace kvsim
