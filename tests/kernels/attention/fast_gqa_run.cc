// Direct runs of the fast GQA decode path.
#include "tests/kernels/attention/fast_gqa_run.h"

#include <cstdint>

#include "kernels/attention/attention_launch.h"

namespace kvsim::testing {
namespace {

Status RunFastGqaCpu(const DecodeAttentionLaunch& launch) {
  DecodeAttentionFastGqaCpu(launch);
  return Status::Ok();
}

}  // namespace

Status RunLauncher(Backend& backend, const DecodeAttentionArgs& args, DecodeLauncher launcher) {
  DecodeAttentionLaunch launch = MakeDecodeLaunch(args);
  if (backend.kind() == BackendKind::kCpu) return launcher(launch);
  KVSIM_ASSIGN_OR_RETURN(DeviceBuffer workspace,
                         backend.Allocate(static_cast<size_t>(DecodeWorkspaceBytes(args))));
  // Poisoned, so a partial the kernels fail to write shows as NaN.
  KVSIM_RETURN_IF_ERROR(backend.Fill(workspace, 0xFF));
  launch.workspace = workspace.as<uint8_t>();
  KVSIM_RETURN_IF_ERROR(launcher(launch));
  return backend.Synchronize();
}

Result<DecodeOutputs> RunFastGqa(Backend& backend, const AttentionCase& c, DeviceCase& device,
                                 AttentionOutputDtype out_dtype) {
  const DecodeLauncher launcher =
      backend.kind() == BackendKind::kCpu ? RunFastGqaCpu : cuda::LaunchDecodeAttentionFastGqa;
  return RunDecodeWith(backend, c, device, out_dtype,
                       [launcher](Backend& on, const DecodeAttentionArgs& args) {
                         return RunLauncher(on, args, launcher);
                       });
}

Status BreakRequestsOneAndTwo(Backend& backend, AttentionCase& c, DeviceCase& device) {
  c.block_table.at(static_cast<size_t>(c.row_stride) + 2) = INT32_MAX;
  c.seq_lens.at(2) = c.max_pages_per_request * c.shape.page_size + 1;
  KVSIM_ASSIGN_OR_RETURN(device.block_table, Upload(backend, c.block_table));
  KVSIM_ASSIGN_OR_RETURN(device.seq_lens, Upload(backend, c.seq_lens));
  return Status::Ok();
}

}  // namespace kvsim::testing
