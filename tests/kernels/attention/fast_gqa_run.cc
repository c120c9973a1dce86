// Direct runs of the fast GQA decode path.
#include "tests/kernels/attention/fast_gqa_run.h"

#include <cstdint>

#include "kernels/attention/decode_fast_gqa.h"
#include "kernels/attention/kv_cache.h"

namespace kvsim::testing {
namespace {

Status RunFastGqaCpu(const DecodeAttentionLaunch& launch) {
  DecodeAttentionFastGqaCpu(launch);
  return Status::Ok();
}

}  // namespace

DecodeAttentionLaunch LaunchFor(const DecodeAttentionArgs& args) {
  DecodeAttentionLaunch launch;
  launch.pool = MakeKvPoolView(args.cache);
  launch.table = MakeBlockTableView(args.block_table);
  launch.seq_lens = args.seq_lens->as<int32_t>();
  launch.q = args.q->as<uint16_t>();
  launch.num_q_heads = args.num_q_heads;
  launch.softmax_scale = args.softmax_scale;
  launch.out_dtype = args.out_dtype;
  launch.out = args.out->data();
  launch.lse = args.lse != nullptr ? args.lse->as<float>() : nullptr;
  launch.request_status = args.request_status->as<int32_t>();
  launch.plan = DecodePlanFor(args);
  return launch;
}

Status RunLauncher(Backend& backend, const DecodeAttentionArgs& args, DecodeLauncher launcher) {
  DecodeAttentionLaunch launch = LaunchFor(args);
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
