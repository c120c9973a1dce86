// Fuzz harness for the KV bookkeeping: a thin driver of the ProofWorld (sim/proof), the world the
// exhaustive check proves the integrity theorem in, past the exhaustive bounds. The input draws the
// world's shape (pool, requests, page size, tags, reuse order, whether writes are checked), then
// picks each operation among the world's enabled ones (the server's, and at most one of the fault
// registry's bookkeeping acts), now and then continuing from a copy of the whole state. The world
// checks the theorem after every operation: every check's verdict is the one predicted, no check
// fails without an act, no silent corruption the theorem does not allow. At the end, unless an act
// was planted, every request finishes, the cache lets go, and every page is free.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "base/check.h"
#include "fuzz/fuzz_input.h"
#include "fuzz/fuzz_target.h"
#include "kernels/backend.h"
#include "sim/proof/proof_world.h"

namespace kvsim {
namespace {

using fuzz::FuzzInput;

constexpr int32_t kMaxOps = 256;
// An operation byte picks among the server's own operations below kFirstActByte, among the acts
// from there (so that most runs go long before an act, if ever), and continues from a copy of the
// state (the tracker by Clone) at kBranch.
constexpr uint8_t kFirstActByte = 0xF0;
constexpr uint8_t kBranch = 0xFF;

sim::ProofWorldConfig DrawShape(FuzzInput& in) {
  sim::ProofWorldConfig config;
  config.num_pages = in.In(1, 8);
  config.num_requests = in.In(1, 4);
  config.page_size = in.In(1, 3);
  config.max_pages_per_request = in.In(1, 5);
  const int32_t widths[] = {2, 4, 64};
  config.tags.width_bits = widths[in.In(0, 3)];
  config.tags.policy = in.Bool() ? TagPolicy::kRandom : TagPolicy::kGeneration;
  config.tags.seed = in.Next();
  config.reuse_order = in.Bool() ? ReuseOrder::kFifo : ReuseOrder::kLifo;
  config.check_writes = in.In(0, 4) != 0;
  return config;
}

// The world returns an error naming the violation and the operations that led to it.
void ApplyChecked(sim::ProofWorld& world, const sim::WorldOp& op) {
  const Result<sim::WorldOpReport> report = world.Apply(op);
  KVSIM_CHECK(report.ok()) << report.status().ToString();
}

void Run(FuzzInput& in) {
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  Result<sim::ProofWorld> created = sim::ProofWorld::Create(DrawShape(in), *backend);
  KVSIM_CHECK(created.ok()) << created.status().ToString();
  sim::ProofWorld world = std::move(*created);
  for (int32_t n = 0; n < kMaxOps && !in.done(); ++n) {
    const uint8_t choice = in.Next();
    if (choice == kBranch) {
      Result<sim::ProofWorld> copy = world.Clone();
      KVSIM_CHECK(copy.ok()) << copy.status().ToString();
      world = std::move(*copy);
      continue;
    }
    std::vector<sim::WorldOp> own;
    std::vector<sim::WorldOp> acts;
    for (const sim::WorldOp& op : world.EnabledOps()) {
      (op.kind == sim::WorldOpKind::kAct ? acts : own).push_back(op);
    }
    const std::vector<sim::WorldOp>& pick = choice < kFirstActByte && !own.empty() ? own : acts;
    if (pick.empty()) continue;
    ApplyChecked(world, pick[choice % pick.size()]);
  }
  if (world.act_planted()) return;
  // Nothing leaks: every request finishes, the cache lets go of its page, and every page is free.
  for (bool progressed = true; progressed;) {
    progressed = false;
    for (const sim::WorldOp& op : world.EnabledOps()) {
      if (op.kind == sim::WorldOpKind::kFinish || op.kind == sim::WorldOpKind::kEvict) {
        ApplyChecked(world, op);
        progressed = true;
        break;
      }
    }
  }
  KVSIM_CHECK_EQ(world.cache().pages_held(), 0);
  KVSIM_CHECK_EQ(world.pool().pages_free(), world.pool().capacity());
}

}  // namespace
}  // namespace kvsim

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kvsim::fuzz::FuzzInput in(data, size);
  kvsim::Run(in);
  return 0;
}
