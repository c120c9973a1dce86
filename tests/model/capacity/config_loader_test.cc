// Model and GPU YAML: every shipped config loads; every error names file, line, column and field.
#include "model/config_loader.h"

#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>

#include "model/catalog.h"

namespace kvsim::model {
namespace {

constexpr const char* kMinimalModel = R"(name: tiny
layers: 2
hidden_size: 64
vocab_size: 100
dense_intermediate_size: 128
attention:
  kind: gqa
  heads: 4
  kv_heads: 2
  head_dim: 16
weights:
  - name: bf16
    default: {format: bf16}
max_context: 4096
)";

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

// The error message of parsing `text`, which must fail.
std::string ModelError(const std::string& text) {
  const Result<ModelSpec> spec = ParseModelSpec(text, "m.yaml");
  EXPECT_FALSE(spec.ok());
  EXPECT_EQ(ExitCodeFor(spec.status()), 2);
  return spec.ok() ? "" : spec.status().message();
}

TEST(ConfigLoaderTest, EveryShippedConfigLoadsUnderItsFileName) {
  const Result<Catalog> catalog = Catalog::Open("configs");
  ASSERT_TRUE(catalog.ok()) << catalog.status().ToString();
  EXPECT_EQ(catalog->ModelNames(),
            (std::vector<std::string>{"deepseek-v3", "glm-5.2", "kimi-k2.6", "llama-2-70b",
                                      "llama-3.1-70b", "qwen3-235b-a22b"}));
  EXPECT_EQ(catalog->GpuNames(),
            (std::vector<std::string>{"a100-sxm-80gb", "b200", "h100-sxm", "h200-sxm"}));
  for (const auto& name : catalog->ModelNames()) {
    const Result<ModelSpec> spec = catalog->LoadModel(name);
    EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  }
  for (const auto& name : catalog->GpuNames()) {
    const Result<GpuSpec> spec = catalog->LoadGpu(name);
    EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  }
}

TEST(ConfigLoaderTest, ReadsTheFieldsItIsGiven) {
  const Result<Catalog> catalog = Catalog::Open("configs");
  ASSERT_TRUE(catalog.ok());
  const Result<ModelSpec> glm = catalog->LoadModel("glm-5.2");
  ASSERT_TRUE(glm.ok());
  EXPECT_EQ(glm->layers, 78);
  EXPECT_EQ(glm->dense_layers, 3);
  EXPECT_EQ(glm->moe_layers(), 75);
  EXPECT_EQ(glm->mtp_layers, 1);
  EXPECT_EQ(glm->attention_kind, AttentionKind::kMla);
  EXPECT_EQ(glm->mla.v_head_dim, 256);
  ASSERT_TRUE(glm->indexer.has_value());
  EXPECT_EQ(glm->indexer->layers, 21);
  EXPECT_EQ(glm->max_context_tokens, 202752);
  EXPECT_EQ(glm->variants.front().name, "fp8");
  const WeightVariant* int4 = glm->FindVariant("int4");
  ASSERT_NE(int4, nullptr);
  EXPECT_EQ(int4->format(Component::kRoutedExperts).dtype, WeightDtype::kInt4);
  EXPECT_EQ(int4->format(Component::kRoutedExperts).group_size, 32);
  EXPECT_EQ(int4->format(Component::kRoutedExperts).scale_bytes, 2);
  EXPECT_EQ(int4->format(Component::kAttention).dtype, WeightDtype::kBf16);
  EXPECT_EQ(glm->variants.front().format(Component::kEmbedding).dtype, WeightDtype::kBf16);
  EXPECT_EQ(glm->variants.front().format(Component::kAttention).dtype, WeightDtype::kFp8);

  const Result<GpuSpec> h200 = catalog->LoadGpu("h200-sxm");
  ASSERT_TRUE(h200.ok());
  EXPECT_EQ(h200->memory_bytes, 143771ull << 20);
  EXPECT_DOUBLE_EQ(h200->memory_bytes_per_s, 4.8e12);
  EXPECT_DOUBLE_EQ(h200->bf16_flop_per_s, 989e12);
  EXPECT_DOUBLE_EQ(h200->fp8_flop_per_s, 1979e12);
  EXPECT_TRUE(h200->has_fp8_cores());
  EXPECT_EQ(h200->sm_count, 132);
  EXPECT_DOUBLE_EQ(h200->sm_cycles_per_s(), 132 * 1830e6);
  EXPECT_DOUBLE_EQ(h200->link_bytes_per_s, 450e9);

  // An A100 has no FP8 tensor cores: its file leaves the rate out, and FP8 work runs at BF16's.
  const Result<GpuSpec> a100 = catalog->LoadGpu("a100-sxm-80gb");
  ASSERT_TRUE(a100.ok()) << a100.status().ToString();
  EXPECT_EQ(a100->memory_bytes, 81920ull << 20);
  EXPECT_EQ(a100->fp8_flop_per_s, 0);
  EXPECT_FALSE(a100->has_fp8_cores());
  EXPECT_DOUBLE_EQ(a100->fp8_work_flop_per_s(), 312e12);
}

TEST(ConfigLoaderTest, MinimalModelParses) {
  const Result<ModelSpec> spec = ParseModelSpec(kMinimalModel, "m.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->dense_layers, 2);  // no moe section: every layer is dense
  EXPECT_FALSE(spec->moe.has_value());
}

TEST(ConfigLoaderTest, ErrorsNameFileLineColumnAndField) {
  EXPECT_EQ(ModelError(Replace(kMinimalModel, "layers: 2", "layers: two")),
            "m.yaml:2:9: field 'layers': expected an integer from 1 to 1024, got 'two'");
  EXPECT_EQ(ModelError(Replace(kMinimalModel, "layers: 2", "layers: 5000")),
            "m.yaml:2:9: field 'layers': 5000 is out of range; allowed: 1 to 1024");
  EXPECT_EQ(ModelError(Replace(kMinimalModel, "  kv_heads: 2", "  kv_heads: 3")),
            "m.yaml:9:13: field 'attention.kv_heads': must divide heads (4)");
  EXPECT_EQ(ModelError(Replace(kMinimalModel, "  head_dim: 16", "  head_dimm: 16")),
            "m.yaml:10:3: field 'attention.head_dimm': unknown field; allowed here: kind, "
            "heads, kv_heads, head_dim");
  EXPECT_EQ(ModelError(Replace(kMinimalModel, "kind: gqa", "kind: mha")),
            "m.yaml:7:9: field 'attention.kind': 'mha' is not allowed; one of: gqa, mla");
  EXPECT_EQ(ModelError(Replace(kMinimalModel, "hidden_size: 64\n", "")),
            "m.yaml:1:1: field 'hidden_size': missing; expected an integer from 1 to 262144");
  EXPECT_EQ(ModelError(Replace(kMinimalModel, "{format: bf16}", "{format: int4, group_size: 48}")),
            "m.yaml:13:41: field 'weights[0].default.group_size': '48' is not allowed; one of: "
            "32, 64, 128");
  // An unclosed list: the parser reports where it gave up.
  EXPECT_EQ(ModelError(Replace(kMinimalModel, "layers: 2", "layers: [2")).substr(0, 30),
            "m.yaml:3:12: YAML syntax error");
  EXPECT_EQ(ModelError("- just\n- a list\n"),
            "m.yaml: the file must be a YAML mapping of fields (name: value)");
}

TEST(ConfigLoaderTest, RejectsInconsistentModels) {
  EXPECT_NE(ModelError(Replace(kMinimalModel, "weights:",
                               "indexer: {heads: 1, head_dim: 8, "
                               "topk: 4, layers: 1}\nweights:"))
                .find("needs attention kind 'mla'"),
            std::string::npos);
  EXPECT_NE(ModelError(Replace(kMinimalModel, "    default: {format: bf16}\n",
                               "    default: {format: bf16}\n  - name: bf16\n    default: {format: "
                               "bf16}\n"))
                .find("variant 'bf16' is listed twice"),
            std::string::npos);
  // Every model states the longest context it serves.
  EXPECT_EQ(ModelError(Replace(kMinimalModel, "max_context: 4096\n", "")),
            "m.yaml:1:1: field 'max_context': missing; expected an integer from 1 to 16777216");
}

TEST(ConfigLoaderTest, GpuErrorsAreLocatedToo) {
  const std::string gpu = R"(name: g
memory_mib: 81559
memory_bandwidth_tb_s: fast
bf16_dense_tflop_s: 989
fp8_dense_tflop_s: 1979
sm_count: 132
clock_mhz: 1830
nvlink_gb_s: 450
usd_per_gpu_hour: 2
)";
  const Result<GpuSpec> spec = ParseGpuSpec(gpu, "g.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(),
            "g.yaml:3:24: field 'memory_bandwidth_tb_s': expected a number from 0.01 to 1000, got "
            "'fast'");
}

// Bytes that are not UTF-8 are refused where they stand, before YAML reads them: yaml-cpp would
// take them, but could write them back only as U+FFFD (found by //fuzz:scenario_fuzz), and so are
// escapes that yaml-cpp decodes to such bytes.
TEST(ConfigLoaderTest, TextThatIsNotUtf8IsRefusedWhereItStands) {
  EXPECT_EQ(ModelError(Replace(kMinimalModel, "name: tiny", "name: ti\xffny")),
            "m.yaml:1:9: byte 0xff is not UTF-8 text; a config file must be UTF-8");
  EXPECT_EQ(ModelError("\xfe\xff"),
            "m.yaml:1:1: byte 0xfe is not UTF-8 text; a config file must be UTF-8");
  // Overlong forms, surrogates, code points above U+10FFFF, lone continuation bytes, sequences
  // cut short (at the end of a line or of the file).
  for (const char* bad :
       {"\xc0\xaf", "\xe0\x80\xaf", "\xf0\x80\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
        "\xf5\x80\x80\x80", "\x80", "\xe2\x82", "\xe2\x82\n"}) {
    EXPECT_EQ(
        ModelError(Replace(kMinimalModel, "layers: 2\n", "layers: 2\n# x" + std::string(bad))),
        "m.yaml:3:4: byte 0x" + fmt::format("{:02x}", static_cast<unsigned char>(bad[0])) +
            " is not UTF-8 text; a config file must be UTF-8")
        << bad;
  }
  // yaml-cpp decodes the escapes \N and \_ to single bytes that are not UTF-8.
  for (const char* escape : {"\\N", "\\_"}) {
    EXPECT_EQ(
        ModelError(Replace(kMinimalModel, "name: tiny", "name: \"a" + std::string(escape) + "\"")),
        "m.yaml:1:7: field 'name': an escape gave text that is not UTF-8 (\\N and \\_ are not "
        "supported); write the character itself");
  }
  // Every width of well-formed UTF-8, at the edges of its range, still reads.
  const std::string name = "t\u00e9\u07ff\u0800\ud7ff\ue000\uffff\U00010000\U0010ffff";
  const Result<ModelSpec> spec = ParseModelSpec(
      Replace(kMinimalModel, "name: tiny", "name: \"" + name + "\"\n# \u2713"), "m.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->name, name);
}

TEST(ConfigLoaderTest, UnknownNamesListWhatIsAvailable) {
  const Result<Catalog> catalog = Catalog::Open("configs");
  ASSERT_TRUE(catalog.ok());
  const Result<ModelSpec> missing = catalog->LoadModel("kimi-k3");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(),
            "unknown model 'kimi-k3'; available: deepseek-v3, glm-5.2, kimi-k2.6, "
            "llama-2-70b, llama-3.1-70b, qwen3-235b-a22b (in configs/models/)");
  const Result<GpuSpec> gpu = catalog->LoadGpu("a100");
  ASSERT_FALSE(gpu.ok());
  EXPECT_EQ(gpu.status().message(),
            "unknown GPU 'a100'; available: a100-sxm-80gb, b200, h100-sxm, h200-sxm (in "
            "configs/gpus/)");
  EXPECT_EQ(Catalog::Open("no-such-folder").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace kvsim::model
