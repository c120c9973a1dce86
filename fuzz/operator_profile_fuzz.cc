// Fuzz harness for the operator profile reader (Vidur's CSV layout): the first byte picks a
// compute profile (mlp.csv) or an all-reduce profile, the rest is the file. Nothing crashes,
// hangs or leaks; a refusal is an error whose message starts with the file's name. What the
// reader accepts holds its bounds (counts positive, tp dividing the KV heads and the MLP width,
// times finite and positive or not measured), and every row it yields, priced by the step
// model's functions with any figures a fit could give, takes a finite positive time.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/check.h"
#include "fuzz/fuzz_target.h"
#include "model/kernel_profile.h"
#include "model/operator_fit.h"
#include "model/operator_profile.h"

namespace kvsim::model {
namespace {

constexpr char kPath[] = "fuzz/mlp.csv";

GpuSpec H100() {
  GpuSpec gpu;
  gpu.name = "h100-sxm";
  gpu.memory_bytes = uint64_t{81559} << 20;
  gpu.memory_bytes_per_s = 3.35e12;
  gpu.bf16_flop_per_s = 989e12;
  gpu.fp8_flop_per_s = 1979e12;
  gpu.link_bytes_per_s = 450e9;
  return gpu;
}

// A profile with the shape of configs/kernels/published.yaml's BF16 curves.
KernelProfile Kernels() {
  KernelProfile k;
  k.bf16.memory = {{1}, {0.69}, {"fuzz"}};
  k.bf16.compute = {{256, 1024, 8192}, {0.44, 0.55, 0.65}, {"fuzz", "fuzz", "fuzz"}};
  k.all_reduce_latency_s = {6e-6, "fuzz"};
  k.link_efficiency = {0.82, "fuzz"};
  return k;
}

void CheckRefusal(const Status& status) {
  KVSIM_CHECK(!status.ok());
  KVSIM_CHECK_EQ(status.message().rfind(kPath, 0), size_t{0}) << status.ToString();
}

void CheckPrices(const OperatorProfiles& profiles) {
  const GpuSpec gpu = H100();
  const KernelProfile base = Kernels();
  // The shipped figures and the ends of the ranges a fit may reach.
  for (const OperatorFigures& f : {FiguresOf(base, 3.2e-6), OperatorFigures{0.05, 0.05, 0, 0},
                                   OperatorFigures{1, 1, 50, 1000}}) {
    const KernelProfile k = WithFigures(base, f, "fuzz");
    for (const OperatorSample& s : OperatorSamples(profiles)) {
      const double t = PredictOperator(s, gpu, k, f);
      KVSIM_CHECK(std::isfinite(t) && t >= 0) << s.op << " " << t;
      KVSIM_CHECK(std::isfinite(s.measured_s) && s.measured_s > 0);
    }
  }
}

}  // namespace
}  // namespace kvsim::model

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvsim::model;
  if (size == 0) return 0;
  std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  OperatorProfiles profiles;
  if (data[0] % 2 == 0) {
    kvsim::Result<ComputeProfile> p = ParseComputeProfile(kPath, std::move(text), "h100-sxm", "m");
    if (!p.ok()) {
      CheckRefusal(p.status());
      return 0;
    }
    for (const ComputeProfileRow& r : p->rows) {
      KVSIM_CHECK(r.tokens >= 1 && r.tp >= 1 && r.heads >= 1 && r.kv_heads >= 1);
      KVSIM_CHECK_EQ(r.heads % r.kv_heads, 0);
      KVSIM_CHECK_EQ(r.kv_heads % r.tp, 0);
      KVSIM_CHECK_EQ(r.intermediate % r.tp, 0);
      KVSIM_CHECK_EQ(r.hidden % r.heads, 0);
      for (double t : r.median_s) KVSIM_CHECK(std::isfinite(t) && t >= 0);
    }
    profiles.compute.push_back(std::move(p).value());
  } else {
    kvsim::Result<AllReduceProfile> p = ParseAllReduceProfile(kPath, std::move(text), "h100-sxm");
    if (!p.ok()) {
      CheckRefusal(p.status());
      return 0;
    }
    for (const AllReduceRow& r : p->rows) {
      KVSIM_CHECK(r.gpus >= 2 && r.bytes >= 1 && std::isfinite(r.median_s) && r.median_s > 0);
    }
    profiles.all_reduce.push_back(std::move(p).value());
  }
  CheckPrices(profiles);
  return 0;
}
