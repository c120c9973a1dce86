// KernelDataPlane: kernel mode's auditor. Every step it writes the new tokens' true K/V into a
// paged cache with append_kv, runs paged decode attention for every row (a prefill chunk reads at
// its last position), and multiplies the attention output by INT4 weights with the W4A16 GEMM:
// all three kernel families, through the Backend, on the rows that passed the integrity check.
// The ownership oracle classifies every access as in timing mode; on top of it each output is
// compared with the FP64 reference computed from the request's own true K/V (independently
// quantised) within the derived bound, and a position written again after a preemption must
// store the same bits as its first write.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "kernels/attention/decode_splits.h"
#include "kernels/attention/kv_cache.h"
#include "kernels/attention/reference/attention_reference.h"
#include "kernels/backend.h"
#include "kernels/gemm/gemm.h"
#include "sim/access/oracle_auditor.h"
#include "sim/access/step_table.h"
#include "sim/dataplane/kernel_spec.h"

namespace kvsim::sim {

// Where kernel mode's wall time went (for the CLI's summary; never in a report or a hash).
struct KernelWallClock {
  double kernels_s = 0;    // append, decode and GEMM calls with their copies to and from them
  double reference_s = 0;  // the FP64 reference and the bit check
};

// One read access of one data plane (a step's decode; in a disaggregated deployment also the
// prefill pool's reads for a transfer, and reads for a copy-out to the KV store) with the writes
// since the one before, for comparing two backends' runs of one scenario step by step
// (`kvsim run --kernel-log`, docs/simulator.md): what must be the same bits on any backend (the
// cache bytes the step's appends stored and every row's status: append_kv quantises exactly) and
// what need not (the outputs' bits, whose fp32 order is the backend's), with the outputs' largest
// error against the bound of the path that ran. Hashes of nothing are 0.
struct KernelStepRecord {
  int64_t step = 0;
  int64_t appended = 0;       // tokens stored, all layers
  uint64_t cache_bits = 0;    // the bytes they stored, in append order
  int64_t decode_rows = 0;    // rows decode attention ran, all layers
  uint64_t statuses = 0;      // append's and decode's status of every token and row
  uint64_t outputs = 0;       // the attention outputs' bf16 bits, all layers
  int64_t checked = 0;        // attention outputs compared with the FP64 reference
  double worst = 0;           // their largest error / bound
  uint64_t gemm_outputs = 0;  // the INT4 projection's output bits (0: not run this step)
  int64_t gemm_checked = 0;
  double gemm_worst = 0;
};

// The record as one line: "pool NAME step N appended N cache 0x.. rows N statuses 0x.. out 0x..
// checked N worst R gemm 0x.. gemm_checked N gemm_worst R" (R with 6 decimals).
std::string KernelStepLine(const std::string& pool, const KernelStepRecord& record);

class KernelDataPlane final : public AccessAuditor {
 public:
  // A cache of `num_pages` pages of `page_size` tokens per layer on `backend` (which must outlive
  // the data plane), and INT4 weights drawn from `seed`.
  static Result<std::unique_ptr<KernelDataPlane>> Create(const KernelSpec& spec, int num_pages,
                                                         int page_size, Backend& backend,
                                                         uint64_t seed);

  void OnAllocate(int32_t page, PageHolder holder) override;
  void OnShare(int32_t page, PageHolder holder) override;
  void OnRelease(int32_t page, PageHolder holder) override;
  Status Writes(const StepAccess& access, IntegrityCounts& counts,
                std::vector<Finding>& findings) override;
  Status Reads(const StepAccess& access, IntegrityCounts& counts,
               std::vector<Finding>& findings) override;
  bool Clean(const StepAccess& access, size_t b) override { return oracle_.Clean(access, b); }
  void Forget(int32_t slot, int64_t request) override;
  void PredictEscapes(const TagConfig& tags) override { oracle_.PredictEscapes(tags); }
  void AddTotals(RunReport& report) const override;
  void set_faults(FaultInjector* faults) override { faults_ = faults; }

  const KernelWallClock& wall() const { return wall_; }
  // Appends one KernelStepLine per read access to `lines` (which must outlive the run), naming
  // `pool`.
  void set_step_log(std::vector<std::string>* lines, std::string pool) {
    step_log_ = lines;
    pool_ = std::move(pool);
  }

 private:
  // What the data plane remembers of one request: a hash of the bytes the first write of each
  // position stored, [position * layers + layer] (0: never written), to check rewrites against;
  // and, while the reference cache has room, the reference's stored K and V rows of its positions
  // so far, [layer][position][head][dim] (MLA: K only).
  struct SlotRecord {
    std::vector<uint64_t> stored_bits;
    int32_t cached_positions = 0;
    std::vector<std::vector<double>> k;
    std::vector<std::vector<double>> v;
  };

  KernelDataPlane(const KernelSpec& spec, int page_size, Backend& backend, OracleAuditor oracle);
  SlotRecord& RecordOf(int32_t slot);
  // The reference's stored K (or V) row of one position and KV head in `layer`: the true values
  // through the independent quantiser.
  void ReferenceRow(uint64_t content, int layer, int kv_head, bool value_row,
                    std::vector<double>& stored) const;
  // The reference's K and V of positions [0, end) of one KV head in `layer` (MLA: V is the first
  // 512 values of the K row), from the slot's cached rows where the cache holds them, computed
  // otherwise.
  void ReferenceKv(int32_t slot, const std::vector<uint64_t>& contents, int32_t end, int layer,
                   int kv_head, reference::DequantizedKv& kv);
  // Hashes the cache bytes of `position` of packed row `b` in `layer` (K, V and their scales).
  Result<uint64_t> StoredBits(int layer, int32_t page, int32_t page_slot);
  Status Append(const StepAccess& access, std::vector<Finding>& findings);
  // The step's reads: the oracle, then decode attention and the projection (in two launches when
  // the batch-composition control fires).
  Status DecodeStep(const StepAccess& access, IntegrityCounts& counts,
                    std::vector<Finding>& findings);
  Status Decode(const StepAccess& access, std::vector<Finding>& findings);
  // Compares packed row `b`'s outputs of `layer` with the reference; returns the worst ratio.
  // `path`: the decode path that ran, whose bound the outputs are held to.
  void CheckOutputs(const StepAccess& access, size_t b, int layer, KernelPath path,
                    const DecodeSplits& decode_splits, const std::vector<uint16_t>& out,
                    std::vector<Finding>& findings);
  Status Project(const StepAccess& access, const std::vector<size_t>& ok_rows,
                 std::vector<Finding>& findings);

  KernelSpec spec_;
  int page_size_;
  Backend* backend_;
  OracleAuditor oracle_;
  std::vector<KvCacheStorage> caches_;  // by layer
  float kv_scale_ = 1.0f;               // per-tensor formats: K and V
  float softmax_scale_ = 1.0f;
  Int4Weights weights_;
  std::vector<uint16_t> weights_dequantized_;  // bf16 [k, n], the reference's
  std::vector<SlotRecord> records_;            // by slot
  int64_t cached_values_ = 0;                  // doubles held in the records' rows
  KernelCounts counts_;
  KernelWallClock wall_;
  int64_t reads_seen_ = 0;

  // Per-step scratch, reused.
  StepTable step_;
  std::vector<int32_t> token_request_;
  std::vector<int32_t> token_position_;
  std::vector<int32_t> token_slot_;
  std::vector<uint16_t> k_new_;
  std::vector<uint16_t> v_new_;
  std::vector<uint16_t> q_;
  std::vector<std::vector<uint16_t>> outputs_;  // by layer: bf16 [rows, q_heads, v_dim]
  std::vector<int32_t> statuses_;
  std::vector<uint8_t> row_bytes_;
  FaultInjector* faults_ = nullptr;  // the run's planted bugs, or none
  std::vector<std::string>* step_log_ = nullptr;
  std::string pool_;
  KernelStepRecord record_;  // this step's, while step_log_ is set
};

}  // namespace kvsim::sim
