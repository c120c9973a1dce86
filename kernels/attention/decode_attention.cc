// paged_decode_attention: argument validation, the splits, workspace, and dispatch.
#include "kernels/attention/decode_attention.h"

#include <cmath>
#include <cstdint>
#include <string>

#include "kernels/attention/decode_fast_mla.h"
#include "kernels/attention/kv_format.h"

namespace kvsim {

Status ValidateDecodeHeads(const KvCacheShape& shape, int num_q_heads) {
  if (shape.kind == AttentionKind::kMla) {
    if (num_q_heads < 1 || num_q_heads > kMaxMlaQueryHeads) {
      return OutOfRangeError("num_q_heads " + std::to_string(num_q_heads) +
                             " is out of range for MLA; allowed: 1 to " +
                             std::to_string(kMaxMlaQueryHeads));
    }
    return Status::Ok();
  }
  const int kv_heads = shape.num_kv_heads;
  if (num_q_heads < kv_heads || num_q_heads % kv_heads != 0 ||
      num_q_heads / kv_heads > kMaxGqaGroup) {
    return InvalidArgumentError("num_q_heads " + std::to_string(num_q_heads) +
                                " is not supported with " + std::to_string(kv_heads) +
                                " KV heads; allowed: num_kv_heads times a group of 1 to " +
                                std::to_string(kMaxGqaGroup));
  }
  return Status::Ok();
}

namespace {

// CUDA blocks per split of one request: one per KV head (GQA, both paths), one per head block
// (MLA simple) or per 64-head tile (MLA fast).
int BlocksPerSplit(const KvCacheShape& shape, int num_q_heads, KernelPath path) {
  if (shape.kind == AttentionKind::kGqa) return shape.num_kv_heads;
  const int heads = path == KernelPath::kFast ? kFastMlaHeadsPerTile : kMlaHeadsPerBlock;
  return (num_q_heads + heads - 1) / heads;
}

// The kernels read these with 16-byte vector loads (q rows, K/V rows, the partial results).
Status CheckAligned16(const void* pointer, const char* name) {
  if (reinterpret_cast<uintptr_t>(pointer) % 16 == 0) return Status::Ok();
  return InvalidArgumentError(std::string("decode attention: buffer '") + name +
                              "' is not 16-byte aligned; the kernels read it with 16-byte loads");
}

// Runs the chosen path's CPU implementation.
Status RunCpu(const DecodeAttentionLaunch& launch) {
  if (launch.path == KernelPath::kSimple) {
    DecodeAttentionCpu(launch);
  } else if (launch.pool.v_pages == nullptr) {
    if (launch.fast_mla_math == FastMlaMath::kFp8) {
      DecodeAttentionFastMlaFp8Cpu(launch);
    } else {
      DecodeAttentionFastMlaCpu(launch);
    }
  } else {
    DecodeAttentionFastGqaCpu(launch);
  }
  return Status::Ok();
}

// Enqueues the chosen path's CUDA kernels on launch.stream.
Status RunCuda(const DecodeAttentionLaunch& launch) {
  if (launch.path == KernelPath::kSimple) return cuda::LaunchDecodeAttention(launch);
  if (launch.pool.v_pages == nullptr) {
    return launch.fast_mla_math == FastMlaMath::kFp8 ? cuda::LaunchDecodeAttentionFastMlaFp8(launch)
                                                     : cuda::LaunchDecodeAttentionFastMla(launch);
  }
  return cuda::LaunchDecodeAttentionFastGqa(launch);
}

// The shapes the splits depend on: the cache's, the block table's dimensions and the head count.
Status ValidateDecodeShapes(const DecodeAttentionArgs& args) {
  KVSIM_RETURN_IF_ERROR(ValidateKvCacheShape(args.cache.shape));
  KVSIM_RETURN_IF_ERROR(ValidateBlockTableShape(args.block_table, args.cache.shape.page_size));
  return ValidateDecodeHeads(args.cache.shape, args.num_q_heads);
}

}  // namespace

DecodeSplits DecodeSplitsFor(const DecodeAttentionArgs& args) {
  if (!ValidateDecodeShapes(args).ok()) return DecodeSplits{};
  const KvCacheShape& shape = args.cache.shape;
  return ChooseDecodeSplits(args.block_table.batch,
                            BlocksPerSplit(shape, args.num_q_heads, args.launch.path),
                            int64_t{args.block_table.max_pages_per_request} * shape.page_size);
}

int64_t DecodeWorkspaceBytes(const DecodeAttentionArgs& args) {
  if (!ValidateDecodeShapes(args).ok()) return 0;
  return MakeDecodeWorkspaceLayout(args.block_table.batch, args.num_q_heads,
                                   args.cache.shape.v_head_dim, DecodeSplitsFor(args))
      .total_bytes;
}

DecodeAttentionLaunch MakeDecodeLaunch(const DecodeAttentionArgs& args) {
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
  launch.splits = DecodeSplitsFor(args);
  launch.path = args.launch.path;
  launch.stream = args.launch.stream;
  launch.fast_mla_math = ResolveFastMlaMath(args.cache.shape.format, args.fast_mla_math);
  launch.mla_mma_sync_on_sm90 = args.mla_mma_sync_on_sm90;
  return launch;
}

Status DecodeAttention(Backend& backend, const DecodeAttentionArgs& args) {
  const KvCacheShape& shape = args.cache.shape;
  KVSIM_RETURN_IF_ERROR(ValidateKvCache(backend, args.cache));
  KVSIM_RETURN_IF_ERROR(ValidateBlockTable(backend, args.block_table, shape.page_size));
  KVSIM_RETURN_IF_ERROR(ValidateDecodeHeads(shape, args.num_q_heads));
  if (!std::isfinite(args.softmax_scale) || !(args.softmax_scale > 0.0f)) {
    return InvalidArgumentError("softmax_scale " + std::to_string(args.softmax_scale) +
                                " is not allowed; it must be finite and positive");
  }
  const int64_t batch = args.block_table.batch;
  const int64_t head_rows = batch * args.num_q_heads;
  const int64_t out_element_bytes = args.out_dtype == AttentionOutputDtype::kBf16 ? 2 : 4;
  KVSIM_RETURN_IF_ERROR(
      ValidateArgBuffer(backend, args.seq_lens, batch * int64_t{sizeof(int32_t)}, "seq_lens"));
  KVSIM_RETURN_IF_ERROR(ValidateArgBuffer(backend, args.q, head_rows * shape.head_dim * 2, "q"));
  KVSIM_RETURN_IF_ERROR(ValidateArgBuffer(backend, args.out,
                                          head_rows * shape.v_head_dim * out_element_bytes, "out"));
  if (args.lse != nullptr) {
    KVSIM_RETURN_IF_ERROR(
        ValidateArgBuffer(backend, args.lse, head_rows * int64_t{sizeof(float)}, "lse"));
  }
  KVSIM_RETURN_IF_ERROR(ValidateArgBuffer(backend, args.request_status,
                                          batch * int64_t{sizeof(int32_t)}, "request_status"));

  DecodeAttentionLaunch launch = MakeDecodeLaunch(args);
  if (args.launch.path == KernelPath::kFast && shape.kind == AttentionKind::kMla &&
      launch.fast_mla_math == FastMlaMath::kFp8 && !FastMlaFp8Supported(shape.format)) {
    return InvalidArgumentError(
        "FP8 fast MLA arithmetic is not supported for format '" + KvFormatName(shape.format) +
        "'; it takes e4m3 and e5m2 caches with per-tensor or per-token-head scales, and "
        "FlashMLA's e4m3 rows with block scales (use FastMlaMath::kAuto or kBf16)");
  }
  KVSIM_RETURN_IF_ERROR(CheckAligned16(launch.q, "q"));
  KVSIM_RETURN_IF_ERROR(CheckAligned16(launch.pool.k_pages, "k_pages"));
  KVSIM_RETURN_IF_ERROR(CheckAligned16(launch.pool.v_pages, "v_pages"));
  if (backend.kind() == BackendKind::kCpu) return RunCpu(launch);

  const int64_t workspace_bytes = DecodeWorkspaceBytes(args);
  if (args.workspace != nullptr) {
    KVSIM_RETURN_IF_ERROR(ValidateArgBuffer(backend, args.workspace, workspace_bytes, "workspace"));
    launch.workspace = args.workspace->as<uint8_t>();
    KVSIM_RETURN_IF_ERROR(CheckAligned16(launch.workspace, "workspace"));
    return RunCuda(launch);
  }
  // No caller workspace: one for this call, kept alive until the call's kernels have finished on
  // the stream (freeing it earlier would let a later allocation reuse memory they still write).
  KVSIM_ASSIGN_OR_RETURN(DeviceBuffer owned,
                         backend.Allocate(static_cast<size_t>(workspace_bytes)));
  launch.workspace = owned.as<uint8_t>();
  KVSIM_RETURN_IF_ERROR(CheckAligned16(launch.workspace, "workspace"));
  const Status launched = RunCuda(launch);
  const Status finished = cuda::SynchronizeStream(launch.stream);
  KVSIM_RETURN_IF_ERROR(launched);
  return finished;
}

}  // namespace kvsim
