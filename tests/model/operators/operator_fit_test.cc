// The step-time model against Vidur's measured operator times: the refit recovers figures it is
// given, and the held-out errors are the ones docs/capacity-validation.md publishes.
#include "model/operator_fit.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "model/catalog.h"
#include "model/kernel_profile.h"
#include "tests/model/capacity/shipped_configs.h"

namespace kvsim::model {
namespace {

const KernelProfile& Published() { return *ShippedParams().kernels; }

std::map<std::string, GpuSpec> Gpus() {
  std::map<std::string, GpuSpec> gpus;
  for (const char* name : {"h100-sxm", "a100-sxm-80gb"}) {
    Result<GpuSpec> gpu = ShippedCatalog().LoadGpu(name);
    EXPECT_TRUE(gpu.ok());
    gpus.emplace(name, *gpu);
  }
  return gpus;
}

const OperatorProfiles& Shipped() {
  static const OperatorProfiles* profiles = [] {
    Result<OperatorProfiles> p = LoadOperatorProfiles("third_party/vidur_profiles");
    EXPECT_TRUE(p.ok()) << p.status().message();
    return new OperatorProfiles(std::move(p).value());
  }();
  return *profiles;
}

const OperatorValidation& Validation() {
  static const OperatorValidation* v = [] {
    Result<OperatorValidation> r =
        ValidateOperators(Shipped(), Gpus(), Published(), ShippedParams().kernel_latency_s);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return new OperatorValidation(std::move(r).value());
  }();
  return *v;
}

const ErrorSummary& Line(const std::vector<ValidationLine>& lines, const std::string& gpu,
                         OperatorFamily family) {
  for (const ValidationLine& l : lines) {
    if (l.gpu == gpu && l.family == family && (l.model == "all" || l.model.empty())) {
      return l.errors;
    }
  }
  ADD_FAILURE() << "no line for " << gpu << " " << OperatorFamilyName(family);
  static const ErrorSummary none;
  return none;
}

TEST(OperatorFitTest, TheShippedFiguresAreThePublishedProfilesAndTheCalibrations) {
  const OperatorFigures f = FiguresOf(Published(), 3.185e-6);
  EXPECT_DOUBLE_EQ(f.gemm_memory_efficiency, 0.69);
  EXPECT_DOUBLE_EQ(f.gemm_compute_efficiency, 0.65);
  EXPECT_DOUBLE_EQ(f.kernel_fixed_us, 3.185);
  EXPECT_DOUBLE_EQ(f.all_reduce_latency_us, 6);
  // WithFigures keeps the compute curve's shape and scales its top; at most 1.
  OperatorFigures g = f;
  g.gemm_compute_efficiency = 0.78;
  const KernelProfile k = WithFigures(Published(), g, "test");
  const EfficiencyCurve& c = k.bf16.compute;
  EXPECT_NEAR(c.At(8192), 0.78, 1e-12);
  EXPECT_NEAR(c.At(256) / c.At(8192), Published().bf16.compute.At(256) / 0.65, 1e-12);
  EXPECT_DOUBLE_EQ(k.bf16.memory.At(7), 0.69);
}

// A fitted profile written as YAML reads back to the same figures and sources, so a calibration
// file (and through it a scenario) can name it.
TEST(OperatorFitTest, AFittedKernelProfileWrittenAsYamlReadsBackTheSame) {
  OperatorFigures f = FiguresOf(Published(), 3e-6);
  f.gemm_memory_efficiency = 0.8435980224609375;
  f.gemm_compute_efficiency = 0.7883628845214844;
  f.all_reduce_latency_us = 30.4140625;
  KernelProfile fitted = WithFigures(Published(), f, "fitted to \"quoted\" profiles: a, b");
  fitted.name = "published-fitted-h100-sxm";
  const std::string path =
      (std::filesystem::path(::testing::TempDir()) / "fitted-kernels.yaml").string();
  std::ofstream(path) << KernelProfileYaml(fitted);
  const Result<KernelProfile> back = LoadKernelProfile(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->name, fitted.name);
  for (const auto& [a, b] : {std::pair<const EfficiencyCurve*, const EfficiencyCurve*>{
                                 &back->bf16.memory, &fitted.bf16.memory},
                             {&back->bf16.compute, &fitted.bf16.compute},
                             {&back->fp8.memory, &fitted.fp8.memory},
                             {&back->fp8.compute, &fitted.fp8.compute},
                             {&back->weight_only_memory, &fitted.weight_only_memory}}) {
    ASSERT_EQ(a->m, b->m);
    ASSERT_EQ(a->source, b->source);
    for (size_t i = 0; i < a->m.size(); ++i) {
      EXPECT_NEAR(a->efficiency[i], b->efficiency[i], 1e-14);
    }
  }
  EXPECT_NEAR(back->all_reduce_latency_s.value, 30.4140625e-6, 1e-18);
  EXPECT_EQ(back->all_reduce_latency_s.source, fitted.all_reduce_latency_s.source);
  EXPECT_DOUBLE_EQ(back->link_efficiency.value, fitted.link_efficiency.value);
  EXPECT_DOUBLE_EQ(back->attention_decode_memory.value, fitted.attention_decode_memory.value);
  EXPECT_DOUBLE_EQ(back->host_overhead_s.value, fitted.host_overhead_s.value);
  EXPECT_EQ(back->kernels.attention_projections, fitted.kernels.attention_projections);
  EXPECT_EQ(back->kernels.lm_head, fitted.kernels.lm_head);
  EXPECT_EQ(back->kernels.routed_experts, fitted.kernels.routed_experts);
}

// Samples priced by PredictOperator with known figures: the fit, which searches a reduced form
// of the same prices, must give the figures back (so the two forms agree).
TEST(OperatorFitTest, TheRefitRecoversFiguresThatMadeTheTimes) {
  const GpuSpec gpu = Gpus().at("h100-sxm");
  OperatorFigures truth;
  truth.gemm_memory_efficiency = 0.81;
  truth.gemm_compute_efficiency = 0.73;
  truth.kernel_fixed_us = 4.7;
  truth.all_reduce_latency_us = 23.5;
  const KernelProfile k = WithFigures(Published(), truth, "truth");
  std::vector<OperatorSample> samples;
  for (const OperatorSample& s : OperatorSamples(Shipped())) {
    if (s.gpu != "h100-sxm" || s.family == OperatorFamily::kElementwise) continue;
    if (s.tokens % 7 != 3 && s.family != OperatorFamily::kAllReduce) continue;  // a spread
    OperatorSample priced = s;
    priced.measured_s = PredictOperator(s, gpu, k, truth);
    samples.push_back(priced);
  }
  ASSERT_GT(samples.size(), 1000u);
  std::vector<const OperatorSample*> refs;
  for (const OperatorSample& s : samples) refs.push_back(&s);
  const OperatorFigures fitted = FitFigures(refs, gpu, Published(), FiguresOf(Published(), 3e-6));
  EXPECT_NEAR(fitted.gemm_memory_efficiency, 0.81, 1e-3);
  EXPECT_NEAR(fitted.gemm_compute_efficiency, 0.73, 1e-3);
  EXPECT_NEAR(fitted.kernel_fixed_us, 4.7, 0.01);
  EXPECT_NEAR(fitted.all_reduce_latency_us, 23.5, 0.05);
}

// The held-out errors docs/capacity-validation.md publishes (to 0.1 percentage point), and the
// goal on H100: median at most 10% and 90th percentile at most 25% for every family the refit
// sets.
TEST(OperatorFitTest, HeldOutErrorsOnH100AreThePublishedOnesAndMeetTheGoal) {
  const OperatorValidation& v = Validation();
  EXPECT_EQ(v.files, 16);
  struct Published {
    OperatorFamily family;
    double median, p90;
  };
  for (const Published& p : {Published{OperatorFamily::kAttentionProjections, 0.074, 0.194},
                             Published{OperatorFamily::kMlpProjections, 0.080, 0.220},
                             Published{OperatorFamily::kAllReduce, 0.063, 0.197}}) {
    const ErrorSummary& e = Line(v.held_out_lines, "h100-sxm", p.family);
    EXPECT_NEAR(e.median_abs, p.median, 0.0006) << OperatorFamilyName(p.family);
    EXPECT_NEAR(e.p90_abs, p.p90, 0.0006) << OperatorFamilyName(p.family);
    EXPECT_LE(e.median_abs, 0.10);
    EXPECT_LE(e.p90_abs, 0.25);
  }
  // A100 figures transferred to H100: the GEMMs hold, the all-reduce does not.
  EXPECT_NEAR(Line(v.transfer_lines, "h100-sxm", OperatorFamily::kAttentionProjections).median_abs,
              0.072, 0.0006);
  EXPECT_NEAR(Line(v.transfer_lines, "h100-sxm", OperatorFamily::kMlpProjections).median_abs, 0.074,
              0.0006);
  EXPECT_NEAR(Line(v.transfer_lines, "h100-sxm", OperatorFamily::kAllReduce).median_abs, 0.368,
              0.0006);
}

// The shipped model as it is: GEMMs slow by the published efficiencies, all-reduces fast at
// small messages (6 us against Vidur's eager NCCL), and norms, rope, activation and adds priced
// at a kernel's fixed time only, which is far too fast at prefill sizes: the step model's known
// gap, published in docs/capacity-validation.md.
TEST(OperatorFitTest, TheShippedModelsErrorsAreThePublishedOnes) {
  const OperatorValidation& v = Validation();
  const ErrorSummary& attention =
      Line(v.shipped_lines, "h100-sxm", OperatorFamily::kAttentionProjections);
  EXPECT_NEAR(attention.median_abs, 0.164, 0.0006);
  EXPECT_GT(attention.median_signed, 0.10);
  const ErrorSummary& mlp = Line(v.shipped_lines, "h100-sxm", OperatorFamily::kMlpProjections);
  EXPECT_NEAR(mlp.median_abs, 0.223, 0.0006);
  const ErrorSummary& elementwise = Line(v.shipped_lines, "h100-sxm", OperatorFamily::kElementwise);
  EXPECT_NEAR(elementwise.median_signed, -0.801, 0.0006);
  EXPECT_NE(elementwise.bias.find("fast at 1025+ tokens"), std::string::npos) << elementwise.bias;
  const ErrorSummary& reduce = Line(v.shipped_lines, "h100-sxm", OperatorFamily::kAllReduce);
  EXPECT_NEAR(reduce.median_signed, -0.312, 0.0006);
  // The fitted figures: each physical.
  for (const auto& [gpu, f] : v.fitted) {
    EXPECT_GT(f.gemm_memory_efficiency, 0) << gpu;
    EXPECT_LE(f.gemm_memory_efficiency, 1) << gpu;
    EXPECT_GT(f.gemm_compute_efficiency, 0) << gpu;
    EXPECT_LE(f.gemm_compute_efficiency, 1) << gpu;
    EXPECT_GE(f.kernel_fixed_us, 0) << gpu;
    EXPECT_GE(f.all_reduce_latency_us, 0) << gpu;
  }
}

}  // namespace
}  // namespace kvsim::model
