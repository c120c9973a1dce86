// KvCache and BlockTable: one layer's page pools and the block tables that index them, as the
// kernels' entry points take them (buffers on one backend), and KvCacheStorage, which owns them.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kernels/attention/kv_format.h"
#include "kernels/attention/kv_row.h"
#include "kernels/backend.h"

namespace kvsim {

// One layer's cache: non-owning references to its buffers, plus its per-tensor scales.
struct KvCache {
  KvCacheShape shape;
  DeviceBuffer* k_pages = nullptr;         // KvPoolBytes(shape) bytes; MLA: the latent pool
  DeviceBuffer* v_pages = nullptr;         // GQA: KvPoolBytes(shape) bytes; MLA: nullptr
  DeviceBuffer* k_token_scales = nullptr;  // kPerTokenHead: KvScalePoolFloats floats; else null
  DeviceBuffer* v_token_scales = nullptr;  // kPerTokenHead, GQA: as k_token_scales; else null
  float k_scale = 1.0f;  // kPerTensor: K's scale (stored code = Encode(k / k_scale))
  float v_scale = 1.0f;  // kPerTensor: V's scale; MLA must use k_scale (one tensor, one scale)
};

// Block tables: int32 physical page ids, one row per request, row-major with an explicit stride.
struct BlockTable {
  const DeviceBuffer* page_ids = nullptr;  // int32 [batch, row_stride]
  int batch = 0;                           // requests (rows), 1..kMaxBatch
  int max_pages_per_request = 0;           // entries used per row, 1..row_stride
  int row_stride = 0;                      // int32 elements between rows
};

// Requests per kernel call.
inline constexpr int kMaxBatch = 4096;

// Checks every buffer of `cache` against its shape and `backend` (present, the right size, on
// this backend) and the scales (finite, positive; MLA v_scale == k_scale).
Status ValidateKvCache(const Backend& backend, const KvCache& cache);
// Checks the block table's dimensions (not its buffer); `page_size` bounds the tokens a row covers.
Status ValidateBlockTableShape(const BlockTable& table, int page_size);
// Checks the block table's dimensions and buffer.
Status ValidateBlockTable(const Backend& backend, const BlockTable& table, int page_size);
// Checks that `buffer` is present, on `backend`, and holds at least `bytes` bytes; `what` names
// it in the message ("q", "token_status").
Status ValidateArgBuffer(const Backend& backend, const DeviceBuffer* buffer, int64_t bytes,
                         const char* what);

// Raw views for the kernels (after validation).
KvPoolView MakeKvPoolView(const KvCache& cache);
BlockTableView MakeBlockTableView(const BlockTable& table);

// Owns the buffers of one layer's cache on one backend.
class KvCacheStorage {
 public:
  // Allocates the pools for `shape` (contents undefined until written: callers poison or fill).
  static Result<KvCacheStorage> Allocate(Backend& backend, const KvCacheShape& shape,
                                         float k_scale = 1.0f, float v_scale = 1.0f);

  // The references the kernels take; valid while this object lives and is not moved.
  KvCache view();
  // Sets every byte of every pool (pages and scale pools) to `value`.
  Status Fill(Backend& backend, uint8_t value);

 private:
  KvCacheShape shape_;
  float k_scale_ = 1.0f;
  float v_scale_ = 1.0f;
  DeviceBuffer k_pages_;
  DeviceBuffer v_pages_;
  DeviceBuffer k_token_scales_;
  DeviceBuffer v_token_scales_;
};

}  // namespace kvsim
