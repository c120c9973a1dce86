// The plan command's building blocks: --compare expansion, the concurrency list, plan fields,
// deployment YAML, and the gnuplot script.
#include "cli/plan_runner.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "cli/plan_plot.h"
#include "tests/model/capacity/shipped_configs.h"

namespace kvsim::cli {
namespace {

TEST(ExpandCompareTest, CrossProductWithLabels) {
  const Result<std::vector<LabeledSettings>> configs =
      ExpandCompare(model::PlanSettings{}, {"kv-format=bf16,fp8_e4m3", "weights=int4,fp8"});
  ASSERT_TRUE(configs.ok()) << configs.status().ToString();
  ASSERT_EQ(configs->size(), 4u);
  EXPECT_EQ((*configs)[0].label, "kv-format=bf16 weights=int4");
  EXPECT_EQ((*configs)[3].label, "kv-format=fp8_e4m3 weights=fp8");
  EXPECT_EQ(KvFormatName((*configs)[3].settings.deployment.kv_format), "fp8_e4m3");
  EXPECT_EQ((*configs)[3].settings.deployment.weight_variant, "fp8");
  // No --compare: one unlabelled configuration.
  const auto single = ExpandCompare(model::PlanSettings{}, {});
  ASSERT_TRUE(single.ok());
  ASSERT_EQ(single->size(), 1u);
  EXPECT_EQ((*single)[0].label, "");
}

TEST(ExpandCompareTest, ErrorsSayWhatIsAllowed) {
  auto r = ExpandCompare(model::PlanSettings{}, {"kv-format"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(
      r.status().message(),
      "--compare 'kv-format' must be FIELD=VALUE1,VALUE2,... (e.g. kv-format=bf16,fp8_e4m3), or "
      "FIELD+FIELD=... to set two fields to each value (gpus+tp=2,4,8)");
  r = ExpandCompare(model::PlanSettings{}, {"tp=1,two"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "--compare tp=1,two: tp 'two' is not an integer; allowed: 1 to 4096");
  r = ExpandCompare(model::PlanSettings{}, {"gpus=1,2,3,4,5", "tp=1,2,4,8"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "--compare makes 20 configurations; at most 16 allowed");
}

// kv-dtype was the field's former name: it is refused, in a flag's spelling or a YAML key's, with
// the name it has now.
TEST(ExpandCompareTest, TheFormerNameOfKvFormatSaysTheNewOne) {
  model::PlanSettings settings;
  for (const char* field : {"kv-dtype", "kv_dtype"}) {
    const Status refused = model::SetPlanField(settings, field, "fp8_e4m3");
    ASSERT_FALSE(refused.ok()) << field;
    EXPECT_NE(refused.message().find("kv-dtype is now kv-format (bf16"), std::string::npos)
        << refused.message();
  }
  EXPECT_TRUE(model::SetPlanField(settings, "kv_format", "fp8_e4m3").ok());
}

// gpus+tp=2,4,8: a paired sweep, each value set in both fields.
TEST(ExpandCompareTest, PairedFieldsTakeEachValueTogether) {
  const auto configs =
      ExpandCompare(model::PlanSettings{}, {"gpus+tp=2,4,8", "kv-format=bf16,fp8_e4m3"});
  ASSERT_TRUE(configs.ok()) << configs.status().ToString();
  ASSERT_EQ(configs->size(), 6u);
  EXPECT_EQ((*configs)[0].label, "gpus+tp=2 kv-format=bf16");
  EXPECT_EQ((*configs)[5].label, "gpus+tp=8 kv-format=fp8_e4m3");
  for (const LabeledSettings& c : *configs) {
    EXPECT_EQ(c.settings.deployment.gpus, c.settings.deployment.tp) << c.label;
  }
  EXPECT_EQ((*configs)[2].settings.deployment.tp, 4);
}

// A field compared twice, or compared and also set, would win or lose silently: refused.
TEST(ExpandCompareTest, AFieldComparedTwiceOrAlsoSetIsRefused) {
  auto r = ExpandCompare(model::PlanSettings{}, {"tp=4,8", "tp=2"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(ExitCodeFor(r.status()), 2);
  EXPECT_EQ(r.status().message(),
            "--compare 'tp=2': field 'tp' is compared twice; give its values in one --compare");
  // The two spellings of one field, and a field inside a pair.
  r = ExpandCompare(model::PlanSettings{}, {"kv-format=bf16", "kv_format=fp8_e4m3"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("field 'kv-format' is compared twice"), std::string::npos);
  r = ExpandCompare(model::PlanSettings{}, {"gpus+tp=4,8", "tp=2"});
  ASSERT_FALSE(r.ok());
  model::PlanSettings base;
  ASSERT_TRUE(model::SetPlanField(base, "tp", "8").ok());
  r = ExpandCompare(base, {"tp=4,8"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "--compare 'tp=4,8': tp is also set (by --tp or the deployment file), and --compare "
            "would override it; set it one way");
  // Another field set beside a compare is the point of comparing.
  EXPECT_TRUE(ExpandCompare(base, {"gpus=8,16"}).ok());
}

TEST(ConcurrencyListTest, ParsesAndRefuses) {
  const auto ok = ParseConcurrencyList("1,8,16");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, (std::vector<int64_t>{1, 8, 16}));
  for (const char* bad : {"", "1,,2", "0", "-1", "1.5", "2000000", "8 16"}) {
    const auto r = ParseConcurrencyList(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(ExitCodeFor(r.status()), 2) << bad;
    }
  }
}

TEST(PlanFieldsTest, EveryFieldSetsItsSetting) {
  model::PlanSettings s;
  const std::vector<std::pair<std::string, std::string>> fields = {
      {"model", "glm-5.2"},
      {"gpu", "b200"},
      {"gpus", "16"},
      {"tp", "4"},
      {"ep", "4"},
      {"pools", "8"},
      {"mem-fraction", "0.9"},
      {"reserved-gib", "1.5"},
      {"kv-format", "fp8_mla_tiles"},
      {"page-size", "16"},
      {"weights", "int4"},
      {"latent-projections", "sharded"},
      {"mtp", "on"},
      {"context", "4096"},
      {"output", "512"},
      {"usd-per-gpu-hour", "2.25"}};
  ASSERT_EQ(fields.size(), model::PlanFieldNames().size());
  for (const auto& [field, value] : fields) {
    ASSERT_TRUE(model::SetPlanField(s, field, value).ok()) << field;
  }
  const model::Deployment& d = s.deployment;
  EXPECT_EQ(s.model, "glm-5.2");
  EXPECT_EQ(s.gpu, "b200");
  EXPECT_EQ(d.gpus, 16);
  EXPECT_EQ(d.ep, 4);
  EXPECT_EQ(d.tp, 4);
  EXPECT_EQ(d.pools, 8);
  EXPECT_EQ(d.memory_fraction, 0.9);
  EXPECT_EQ(d.reserved_bytes, 3u << 29);
  EXPECT_EQ(KvFormatName(d.kv_format), "fp8_mla_tiles");
  EXPECT_EQ(d.page_size, 16);
  EXPECT_EQ(d.weight_variant, "int4");
  EXPECT_FALSE(d.replicate_latent_projections);
  EXPECT_TRUE(d.load_mtp);
  EXPECT_EQ(d.context_tokens, 4096);
  EXPECT_EQ(d.output_tokens, 512);
  EXPECT_EQ(d.usd_per_gpu_hour, 2.25);
  // YAML spellings with '_' are the same fields.
  ASSERT_TRUE(model::SetPlanField(s, "kv_format", "bf16").ok());
  EXPECT_EQ(KvFormatName(s.deployment.kv_format), "bf16");
  const Status unknown = model::SetPlanField(s, "colour", "red");
  EXPECT_EQ(unknown.message().substr(0, 40), "unknown field 'colour'; allowed: model, ");
  EXPECT_EQ(model::SetPlanField(s, "mem-fraction", "1.5").message(),
            "mem-fraction 1.5 is out of range; allowed: 0.01 to 1");
  EXPECT_EQ(model::SetPlanField(s, "mtp", "maybe").message(),
            "mtp 'maybe' is not allowed; allowed: on, off");
}

// Values the help does not offer are refused, naming what is allowed, not read some other way.
TEST(PlanFieldsTest, EmptyValuesAndOtherSpellingsAreRefused) {
  model::PlanSettings s;
  for (const char* field : {"model", "gpu", "gpus", "kv-format", "weights", "mtp", "context"}) {
    for (const char* empty : {"", " ", "\t"}) {
      EXPECT_EQ(model::SetPlanField(s, field, empty).message(),
                std::string(field) + " must not be empty");
    }
  }
  EXPECT_EQ(model::SetPlanField(s, "pools", "0").message(),
            "pools 0 is out of range; allowed: 1 to 4096");
  EXPECT_EQ(model::SetPlanField(s, "mtp", "true").message(),
            "mtp 'true' is not allowed; allowed: on, off");
  EXPECT_EQ(model::SetPlanField(s, "mem-fraction", "0x1p-1").message(),
            "mem-fraction '0x1p-1' is not a number; allowed: 0.01 to 1");
  EXPECT_EQ(model::SetPlanField(s, "mem-fraction", " 0.8").message(),
            "mem-fraction ' 0.8' is not a number; allowed: 0.01 to 1");
  EXPECT_EQ(model::SetPlanField(s, "gpus", "0x8").message(),
            "gpus '0x8' is not an integer; allowed: 1 to 4096");
  EXPECT_TRUE(s.given.empty()) << "a refused value must not count as given";
}

TEST(PlanFieldsTest, DeploymentYamlErrorsNameTheLineAndField) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(tmp != nullptr ? tmp : "/tmp") + "/deployment.yaml";
  std::ofstream(path) << "model: glm-5.2\ngpus: 8\ntp: eight\n";
  model::PlanSettings s;
  const Status status = model::ApplyPlanYaml(s, path);
  EXPECT_EQ(status.message(),
            path + ":3:5: field 'tp': tp 'eight' is not an integer; allowed: 1 to 4096");
  std::ofstream(path) << "model: glm-5.2\nkv_format: fp8_e4m3\npools: 2\n";
  ASSERT_TRUE(model::ApplyPlanYaml(s, path).ok());
  EXPECT_EQ(s.model, "glm-5.2");
  EXPECT_EQ(KvFormatName(s.deployment.kv_format), "fp8_e4m3");
  EXPECT_EQ(s.deployment.pools, 2);
}

// A YAML key given twice, under one spelling or both, is refused at its second appearance.
TEST(PlanFieldsTest, DeploymentYamlRefusesAFieldGivenTwice) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(tmp != nullptr ? tmp : "/tmp") + "/twice.yaml";
  std::ofstream(path) << "model: glm-5.2\nkv_format: bf16\nkv-format: fp8_e4m3\n";
  model::PlanSettings s;
  Status status = model::ApplyPlanYaml(s, path);
  EXPECT_EQ(status.message(), path +
                                  ":3:1: field 'kv-format': given twice ('-' and '_' spell the "
                                  "same field 'kv-format'); give it once");
  EXPECT_EQ(ExitCodeFor(status), 2);
  std::ofstream(path) << "tp: 8\nmodel: glm-5.2\ntp: 4\n";
  status = model::ApplyPlanYaml(s, path);
  EXPECT_EQ(status.message(),
            path + ":3:1: field 'tp': given twice (first at line 1); give it once");
}

// A model named by a relative path in a deployment file is read from the file's folder, and an
// error loading it names the deployment file and line.
TEST(PlanFieldsTest, DeploymentYamlPathsAreRelativeToTheFile) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string folder = std::string(tmp != nullptr ? tmp : "/tmp");
  std::ofstream(folder + "/dep.yaml") << "model: models/missing.yaml\n";
  model::PlanSettings s;
  ASSERT_TRUE(model::ApplyPlanYaml(s, folder + "/dep.yaml").ok());
  EXPECT_EQ(s.model, folder + "/models/missing.yaml");
  EXPECT_EQ(s.model_origin, folder + "/dep.yaml:1:8");
  const Result<model::Catalog> catalog = model::Catalog::Open("configs");
  ASSERT_TRUE(catalog.ok());
  const auto plan = model::PlanOrShortfall(s, *catalog, model::ShippedParams(), {1}, nullptr);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().message().find(folder + "/dep.yaml:1:8: field 'model'"), 0u)
      << plan.status().message();
  // A catalog name stays a catalog name.
  std::ofstream(folder + "/dep.yaml") << "model: glm-5.2\n";
  ASSERT_TRUE(model::ApplyPlanYaml(s, folder + "/dep.yaml").ok());
  EXPECT_EQ(s.model, "glm-5.2");
}

// An option that does nothing for the planned model is refused, in its configuration's column.
TEST(RunPlansTest, AnOptionWithNoEffectOnTheModelIsRefused) {
  const Result<model::Catalog> catalog = model::Catalog::Open("configs");
  ASSERT_TRUE(catalog.ok());
  model::PlanSettings base;
  ASSERT_TRUE(model::SetPlanField(base, "latent-projections", "sharded").ok());
  const auto configs = ExpandCompare(base, {"model=kimi-k2.6,llama-3.1-70b"});
  ASSERT_TRUE(configs.ok());
  const auto plans = RunPlans(*catalog, model::ShippedParams(), *configs, {1}, nullptr);
  ASSERT_TRUE(plans.ok()) << plans.status().ToString();
  EXPECT_TRUE((*plans)[0].result.planned());
  EXPECT_EQ((*plans)[1].result.status, model::PlanStatus::kInvalid);
  EXPECT_EQ((*plans)[1].result.shortfall,
            "latent-projections has no effect on llama-3.1-70b: it places MLA's down-projections "
            "and DSA's indexer, and llama-3.1-70b uses GQA attention; remove it");
  model::PlanSettings mtp;
  mtp.model = "llama-3.1-70b";
  ASSERT_TRUE(model::SetPlanField(mtp, "mtp", "off").ok());
  const auto alone = RunPlans(*catalog, model::ShippedParams(), {{"", mtp}}, {1}, nullptr);
  ASSERT_FALSE(alone.ok());
  EXPECT_EQ(ExitCodeFor(alone.status()), 2);
  EXPECT_NE(alone.status().message().find("mtp has no effect on llama-3.1-70b"), std::string::npos)
      << alone.status().message();
}

// DeepSeek-V3 (79.3 GiB of weights per GPU at tp 8) on 8 x `gpu`, over `compare`, at
// concurrency 1 with default step-time coefficients.
Result<std::vector<LabeledPlan>> PlanDeepSeek(const std::string& gpu, const std::string& compare) {
  KVSIM_ASSIGN_OR_RETURN(const model::Catalog catalog, model::Catalog::Open("configs"));
  model::PlanSettings base;
  base.model = "deepseek-v3";
  base.gpu = gpu;
  KVSIM_ASSIGN_OR_RETURN(const std::vector<LabeledSettings> configs,
                         ExpandCompare(base, {compare}));
  return RunPlans(catalog, model::ShippedParams(), configs, {1}, nullptr);
}

// --compare plans every configuration: those whose weights do not fit say so beside the others,
// and only when none fits is it an error, with each one's numbers.
TEST(RunPlansTest, PlansEveryConfigurationAndFailsOnlyWhenNoneFits) {
  const auto plans = PlanDeepSeek("h200-sxm", "gpu=h100-sxm,h200-sxm,b200");
  ASSERT_TRUE(plans.ok()) << plans.status().ToString();
  ASSERT_EQ(plans->size(), 3u);
  const model::PlanResult& h100 = (*plans)[0].result;
  EXPECT_FALSE(h100.capacity.weights_fit);
  EXPECT_EQ(h100.status, model::PlanStatus::kWeightsDoNotFit);
  EXPECT_EQ(h100.shortfall, "weights do not fit: 79.3 GiB needed per GPU, 66.1 available");
  EXPECT_TRUE((*plans)[1].result.planned());
  EXPECT_TRUE((*plans)[2].result.planned());
  EXPECT_GT((*plans)[2].result.capacity.tokens_total, 0);

  const auto failed = PlanDeepSeek("h100-sxm", "tp=4,8");
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(ExitCodeFor(failed.status()), 1);
  EXPECT_EQ(failed.status().message(),
            "none of the 2 configurations can be planned:\n"
            "  tp=4: weights do not fit: 157.5 GiB needed per GPU, 66.1 available\n"
            "  tp=8: weights do not fit: 79.3 GiB needed per GPU, 66.1 available\n"
            "use more GPUs, a larger tp, a smaller weight variant, a larger memory fraction or a "
            "shorter context");
  // One configuration: the message of the single plan, with the memory fraction.
  const auto single = PlanDeepSeek("h100-sxm", "tp=8");
  ASSERT_FALSE(single.ok());
  EXPECT_EQ(single.status().message().substr(0, 60),
            "the weights do not fit: weights need 79.3 GiB per GPU, 66.1 ");
}

TEST(PlanTextTest, AConfigurationWhoseWeightsDoNotFitSaysSoInItsColumns) {
  const auto plans = PlanDeepSeek("h200-sxm", "gpu=h100-sxm,h200-sxm");
  ASSERT_TRUE(plans.ok());
  std::ostringstream text;
  PrintPlanText(text, *plans);
  EXPECT_NE(text.str().find("status                      weights do not fit: 79.3 GiB needed "
                            "per GPU, 66.1 available                            planned"),
            std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("not planned       -         -            -"), std::string::npos)
      << text.str();
  std::ostringstream json;
  PrintPlanJson(json, *plans);
  EXPECT_NE(json.str().find("\"does_not_fit\": \"weights do not fit: 79.3 GiB needed per GPU, "
                            "66.1 available\""),
            std::string::npos);
  EXPECT_NE(json.str().find("\"does_not_fit\": null"), std::string::npos);
  EXPECT_NE(json.str().find("\"tokens_total\": null"), std::string::npos);
  std::ostringstream csv;
  PrintPlanCsv(csv, *plans);
  EXPECT_NE(csv.str().find(",weights_do_not_fit,false,\"weights do not fit: 79.3 GiB needed per "
                           "GPU, 66.1 available\","),
            std::string::npos)
      << csv.str();
  // The plot leaves the configuration out rather than drawing it at zero, and says why.
  const Result<std::string> script = PlanPlotScript(*plans, "out.svg", "t");
  ASSERT_TRUE(script.ok());
  EXPECT_EQ(script->find("$d0"), std::string::npos);
  EXPECT_NE(script->find("plot $d1 using 1:2"), std::string::npos) << *script;
  EXPECT_NE(script->find("not drawn: gpu=h100-sxm: weights do not fit: 79.3 GiB"),
            std::string::npos)
      << *script;
  EXPECT_FALSE(PlanPlotScript({(*plans)[0]}, "out.svg", "t").ok());
}

// A sweep crossing gpus and tp: the pairs where tp does not divide gpus are columns that say so,
// never an abort of the whole run; every pair invalid is bad input (exit 2).
TEST(RunPlansTest, InvalidPairsOfASweepAreColumnsThatSaySo) {
  const Result<model::Catalog> catalog = model::Catalog::Open("configs");
  ASSERT_TRUE(catalog.ok());
  model::PlanSettings base;
  const auto configs = ExpandCompare(base, {"gpus=4,8", "tp=4,8"});
  ASSERT_TRUE(configs.ok());
  const auto plans = RunPlans(*catalog, model::ShippedParams(), *configs, {1}, nullptr);
  ASSERT_TRUE(plans.ok()) << plans.status().ToString();
  ASSERT_EQ(plans->size(), 4u);
  EXPECT_EQ((*plans)[1].label, "gpus=4 tp=8");
  EXPECT_EQ((*plans)[1].result.status, model::PlanStatus::kInvalid);
  EXPECT_EQ((*plans)[1].result.shortfall, "tp 8 must divide the GPU count 4 (gpus / tp replicas)");
  std::ostringstream text;
  PrintPlanText(text, *plans);
  EXPECT_NE(text.str().find("tp 8 must divide the GPU count 4"), std::string::npos) << text.str();
  const auto invalid = ExpandCompare(base, {"tp=3,5"});
  ASSERT_TRUE(invalid.ok());
  const auto none = RunPlans(*catalog, model::ShippedParams(), *invalid, {1}, nullptr);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(ExitCodeFor(none.status()), 2);
}

// A plan to draw: `model` with `weights` on 8 x `gpu` at tp 8, BF16 cache, 21,000 tokens.
LabeledPlan PlotPlan(const std::string& label, const std::string& model, const std::string& gpu,
                     const std::string& weights) {
  LabeledPlan plan;
  plan.label = label;
  plan.result.model.name = model;
  plan.result.gpu.name = gpu;
  plan.result.weight_variant = weights;
  model::DecodeEstimate e;
  e.concurrency = 1;
  e.fits = true;
  e.tokens_per_s = 100;
  plan.result.decode.push_back(e);
  return plan;
}

// The title names what every configuration shares, never the first one's model or GPU alone;
// the legend names what differs, including what the label leaves out.
TEST(PlotScriptTest, TitleHasTheSharedFieldsAndLegendsTheVaryingOnes) {
  const std::vector<LabeledPlan> gpus = {PlotPlan("gpu=h100-sxm", "kimi-k2.6", "h100-sxm", "int4"),
                                         PlotPlan("gpu=h200-sxm", "kimi-k2.6", "h200-sxm", "int4")};
  EXPECT_EQ(PlanPlotTitle(gpus),
            "kimi-k2.6, tp 8, bf16 KV cache, int4 weights, 21,000 tokens per request: decode "
            "tokens/s");
  const Result<std::string> gpu_script = PlanPlotScript(gpus, "out.svg", PlanPlotTitle(gpus));
  ASSERT_TRUE(gpu_script.ok());
  EXPECT_NE(gpu_script->find("title 'gpu=h100-sxm'"), std::string::npos) << *gpu_script;

  // Comparing models changes the weight variant too (each model's default): the legend says so.
  const std::vector<LabeledPlan> models = {
      PlotPlan("model=glm-5.2", "glm-5.2", "h200-sxm", "fp8"),
      PlotPlan("model=kimi-k2.6", "kimi-k2.6", "h200-sxm", "int4")};
  EXPECT_EQ(PlanPlotTitle(models),
            "8 x h200-sxm, tp 8, bf16 KV cache, 21,000 tokens per request: decode tokens/s");
  const Result<std::string> script = PlanPlotScript(models, "out.svg", PlanPlotTitle(models));
  ASSERT_TRUE(script.ok());
  EXPECT_NE(script->find("set title '8 x h200-sxm, tp 8,"), std::string::npos) << *script;
  EXPECT_NE(script->find("title 'model=glm-5.2 (fp8 weights)'"), std::string::npos) << *script;
  EXPECT_NE(script->find("title 'model=kimi-k2.6 (int4 weights)'"), std::string::npos);

  // One configuration: everything is shared.
  EXPECT_EQ(PlanPlotTitle({gpus[0]}),
            "kimi-k2.6 on 8 x h100-sxm, tp 8, bf16 KV cache, int4 weights, 21,000 tokens per "
            "request: decode tokens/s");
}

TEST(PlotScriptTest, DrawsOnlyWhatFitsAndRefusesOtherFormats) {
  LabeledPlan plan;
  plan.label = "kv-format=bf16";
  plan.result.model.name = "m";
  for (int64_t c : {1, 64}) {
    model::DecodeEstimate e;
    e.concurrency = c;
    e.fits = c == 1;
    e.tokens_per_s = c == 1 ? 137 : 2000;
    plan.result.decode.push_back(e);
  }
  const Result<std::string> script = PlanPlotScript({plan}, "out.svg", "title");
  ASSERT_TRUE(script.ok());
  EXPECT_NE(script->find("set terminal svg"), std::string::npos);
  // Only the concurrency that fits is drawn: no throughput is invented for the other.
  EXPECT_NE(script->find("$d0 << EOD\n1 137.00\nEOD\n"), std::string::npos) << *script;
  EXPECT_EQ(script->find("2000"), std::string::npos) << *script;
  EXPECT_NE(script->find("title 'kv-format=bf16 (out of memory at 64)'"), std::string::npos)
      << *script;
  EXPECT_NE(PlanPlotScript({plan}, "out.png", "t")->find("pngcairo"), std::string::npos);
  EXPECT_EQ(PlanPlotScript({plan}, "out.pdf", "t").status().message(),
            "plot file 'out.pdf' must end in .png or .svg");
  EXPECT_FALSE(PlanPlotScript({plan}, "it's.svg", "t").ok());
}

}  // namespace
}  // namespace kvsim::cli
