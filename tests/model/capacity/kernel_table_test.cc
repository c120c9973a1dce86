// The kernel table: the benchmark's writer and the model's reader agree, bad tables are refused
// with the file, line, column, field and what is allowed, a table for another GPU is refused, and
// the INT4 speed it gives is interpolated in log m and held at the ends. The numbers come from a
// synthetic test fixture (testdata/synthetic_kernel_table.yaml), not from a measurement.
#include "model/kernel_table_loader.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>

#include "model/int4_speed.h"
#include "model/kernel_table.h"
#include "model/step_time.h"
#include "tests/model/capacity/shipped_configs.h"

namespace kvsim::model {
namespace {

constexpr char kFixture[] = "tests/model/capacity/testdata/synthetic_kernel_table.yaml";

const Catalog& Configs() { return ShippedCatalog(); }

ModelSpec LoadedModel(const std::string& name) {
  Result<ModelSpec> model = Configs().LoadModel(name);
  KVSIM_CHECK(model.ok()) << model.status().ToString();
  return std::move(model).value();
}

GpuSpec LoadedGpu(const std::string& name) {
  Result<GpuSpec> gpu = Configs().LoadGpu(name);
  KVSIM_CHECK(gpu.ok()) << gpu.status().ToString();
  return std::move(gpu).value();
}

KernelTable Fixture() {
  Result<KernelTable> table = LoadKernelTable(kFixture);
  KVSIM_CHECK(table.ok()) << table.status().ToString();
  return std::move(table).value();
}

// A small valid table; the error tests change one thing in it. Line numbers are the file's.
constexpr char kSmall[] = R"(kind: kvsim_gemm_table
version: 1
source: gpu_benchmark
gpu: h200-sxm
device: NVIDIA H200
date: 2026-12-01T10:22:03Z
shapes:
  - name: a
    k: 7168
    n: 4096
    rows:
      - {m: 1, int4_us: 10, fp8_us: 20, bf16_us: 40, int4_speedup_over_bf16: 4, int4_speedup_over_fp8: 2}
      - {m: 16, int4_us: 20, fp8_us: 30, bf16_us: 40, int4_speedup_over_bf16: 2, int4_speedup_over_fp8: 1.5}
  - name: b
    k: 2048
    n: 7168
    rows:
      - {m: 1, int4_us: 5, fp8_us: 10, bf16_us: 20, int4_speedup_over_bf16: 4, int4_speedup_over_fp8: 2}
      - {m: 16, int4_us: 10, fp8_us: 15, bf16_us: 20, int4_speedup_over_bf16: 2, int4_speedup_over_fp8: 1.5}
)";

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  KVSIM_CHECK(at != std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST(KernelTableTest, TheFixtureLoadsAndSaysItIsOne) {
  const KernelTable table = Fixture();
  EXPECT_EQ(table.source, KernelTableSource::kTestFixture);
  EXPECT_EQ(table.gpu, "h200-sxm");
  ASSERT_EQ(table.shapes.size(), 3u);
  EXPECT_EQ(table.shapes[0].name, "Kimi-K2.6 gate_up");
  EXPECT_EQ(table.shapes[0].k, 7168);
  ASSERT_EQ(table.shapes[0].rows.size(), 4u);
  EXPECT_EQ(table.shapes[0].rows[3].m, 4096);
  EXPECT_DOUBLE_EQ(table.shapes[0].rows[3].Int4SpeedupOverBf16(), 0.5);
  EXPECT_DOUBLE_EQ(table.shapes[0].rows[3].Int4SpeedupOverFp8(), 0.6);
}

TEST(KernelTableTest, WhatTheBenchmarkWritesReadsBack) {
  KernelTable written;
  written.gpu = "h200-sxm";
  written.device = "NVIDIA H200: \"quoted\" \\ name";
  written.date = "2026-12-01T10:22:03Z";
  written.shapes.push_back({"Kimi-K2.6 gate_up", 7168, 4096, {{1, 7.123456789, 14.5, 27.25}}});
  written.shapes.push_back({"Kimi-K2.6 down", 2048, 7168, {{1, 3.3333333, 6.1, 11.9}}});
  const std::string text = FormatKernelTable(written);
  const Result<KernelTable> read = ParseKernelTable(text, "written.yaml");
  ASSERT_TRUE(read.ok()) << read.status().ToString() << "\n" << text;
  EXPECT_EQ(read->path, "written.yaml");
  EXPECT_EQ(read->source, KernelTableSource::kGpuBenchmark);
  EXPECT_EQ(read->gpu, written.gpu);
  EXPECT_EQ(read->device, written.device);
  EXPECT_EQ(read->date, written.date);
  ASSERT_EQ(read->shapes.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(read->shapes[i].name, written.shapes[i].name);
    EXPECT_EQ(read->shapes[i].k, written.shapes[i].k);
    EXPECT_EQ(read->shapes[i].n, written.shapes[i].n);
    const KernelTableRow& a = written.shapes[i].rows[0];
    const KernelTableRow& b = read->shapes[i].rows[0];
    EXPECT_EQ(b.m, a.m);
    EXPECT_NEAR(b.int4_us / a.int4_us, 1, 1e-6);  // six significant digits
    EXPECT_NEAR(b.fp8_us / a.fp8_us, 1, 1e-6);
    EXPECT_NEAR(b.bf16_us / a.bf16_us, 1, 1e-6);
  }
}

// Control characters in names are written as escapes and read back as they were (the writer used
// to drop them: found by //fuzz:config_fuzz).
TEST(KernelTableTest, ControlCharactersInNamesReadBack) {
  KernelTable written = Fixture();
  written.device = std::string("tab\there, line\nbreak, nul ") + '\0' + " and del \x7f";
  written.shapes[0].name = "\x01\x1f";
  const std::string text = FormatKernelTable(written);
  const Result<KernelTable> read = ParseKernelTable(text, "written.yaml");
  ASSERT_TRUE(read.ok()) << read.status().ToString() << "\n" << text;
  EXPECT_EQ(read->device, written.device);
  EXPECT_EQ(read->shapes[0].name, written.shapes[0].name);
}

struct BadCase {
  const char* from;
  const char* to;
  const char* error;  // a substring of the message
};

TEST(KernelTableTest, BadTablesNameTheFileLineFieldAndWhatIsAllowed) {
  const BadCase cases[] = {
      {"kind: kvsim_gemm_table", "kind: other",
       "t.yaml:1:7: field 'kind': 'other' is not allowed; one of: kvsim_gemm_table"},
      {"version: 1", "version: 2",
       "t.yaml:2:10: field 'version': 2 is out of range; allowed: 1 to 1"},
      {"source: gpu_benchmark", "source: measured",
       "t.yaml:3:9: field 'source': 'measured' is not allowed; one of: gpu_benchmark, "
       "test_fixture"},
      {"device: NVIDIA H200\n", "", "field 'device': missing; expected a string"},
      {"gpu: h200-sxm", "gpu: ''", "t.yaml:4:6: field 'gpu': must not be empty"},
      {"date: 2026-12-01T10:22:03Z", "date: yesterday",
       "t.yaml:6:7: field 'date': 'yesterday' is not a date; expected a day that exists as "
       "YYYY-MM-DD"},
      // Days that do not exist, and times of day that do not.
      {"date: 2026-12-01T10:22:03Z", "date: 2026-02-30",
       "field 'date': '2026-02-30' is not a date"},
      {"date: 2026-12-01T10:22:03Z", "date: 2025-02-29",
       "field 'date': '2025-02-29' is not a date"},
      {"date: 2026-12-01T10:22:03Z", "date: 2026-13-01",
       "field 'date': '2026-13-01' is not a date"},
      {"date: 2026-12-01T10:22:03Z", "date: 2026-12-01T25:00:00Z",
       "field 'date': '2026-12-01T25:00:00Z' is not a date"},
      // Keys given twice: refused, not read first-wins.
      {"version: 1", "version: 1\nversion: 1",
       "t.yaml:3:1: field 'version': given twice (first at line 2); give it once"},
      {"date:", "colour: red\ndate:",
       "t.yaml:6:1: field 'colour': unknown field; allowed here: kind, version, source, gpu, "
       "device, date, shapes"},
      {"shapes:\n  - name: a", "shapes: []\nold:\n  - name: a", "field 'old': unknown field"},
      {"{m: 16, int4_us: 20,", "{m: 1, int4_us: 20,",
       "t.yaml:13:13: field 'shapes[0].rows[1].m': 1 follows m 1; rows must go by ascending m"},
      {"{m: 1, int4_us: 10,", "{m: 1, int4_us: -10,",
       "t.yaml:12:25: field 'shapes[0].rows[0].int4_us': -10 is out of range; allowed: 0.001 to "
       "1000000000"},
      {"{m: 1, int4_us: 10,", "{m: 0, int4_us: 10,",
       "field 'shapes[0].rows[0].m': 0 is out of range; allowed: 1 to 65536"},
      {"bf16_us: 40, int4_speedup_over_bf16: 4,", "bf16_us: 40, int4_speedup_over_bf16: 5,",
       "t.yaml:12:78: field 'shapes[0].rows[0].int4_speedup_over_bf16': 5 disagrees with bf16_us / "
       "int4_us = 4; they must agree within 0.5%"},
      {"fp8_us: 20, bf16_us: 40, int4_speedup_over_bf16: 4, int4_speedup_over_fp8: 2}",
       "fp8_us: 20, bf16_us: 40, int4_speedup_over_bf16: 4}",
       "field 'shapes[0].rows[0].int4_speedup_over_fp8': missing"},
      {"      - {m: 16, int4_us: 10, fp8_us: 15", "      - {m: 32, int4_us: 10, fp8_us: 15",
       "t.yaml:18:7: field 'shapes[1].rows': m 1, 32 differ from the first shape's m 1, 16; every "
       "shape must list the same row counts"},
      {"name: b", "name: a", "t.yaml:14:11: field 'shapes[1].name': listed twice"},
      {"k: 2048", "k: 70000", "field 'shapes[1].k': 70000 is out of range; allowed: 1 to 65536"},
  };
  for (const BadCase& c : cases) {
    const Result<KernelTable> table = ParseKernelTable(Replace(kSmall, c.from, c.to), "t.yaml");
    ASSERT_FALSE(table.ok()) << c.to;
    EXPECT_EQ(table.status().code(), StatusCode::kInvalidArgument) << c.to;
    EXPECT_NE(table.status().message().find(c.error), std::string::npos)
        << c.to << "\n  got:  " << table.status().message() << "\n  want: " << c.error;
  }
  // An empty rows list and an empty shapes list are refused, not planned with.
  const std::string small = kSmall;
  const Result<KernelTable> no_rows =
      ParseKernelTable(small.substr(0, small.find("  - name: b")) +
                           "  - name: b\n    k: 2048\n    n: 7168\n    rows: []\n",
                       "t.yaml");
  ASSERT_FALSE(no_rows.ok());
  EXPECT_NE(no_rows.status().message().find(
                "t.yaml:17:11: field 'shapes[1].rows': empty; expected at least one row"),
            std::string::npos)
      << no_rows.status().message();
  const Result<KernelTable> no_shapes =
      ParseKernelTable(small.substr(0, small.find("shapes:")) + "shapes: []\n", "t.yaml");
  ASSERT_FALSE(no_shapes.ok());
  EXPECT_NE(no_shapes.status().message().find("t.yaml:7:9: field 'shapes': empty"),
            std::string::npos)
      << no_shapes.status().message();
  EXPECT_TRUE(ParseKernelTable(kSmall, "t.yaml").ok());
  EXPECT_EQ(LoadKernelTable("no/such/table.yaml").status().code(), StatusCode::kNotFound);
}

TEST(KernelTableTest, TheModelsOwnExpertShapesGiveTheSpeedWhenTheTableHasThem) {
  const Result<Int4Speed> kimi =
      Int4SpeedFromTable(Fixture(), LoadedModel("kimi-k2.6"), LoadedGpu("h200-sxm"));
  ASSERT_TRUE(kimi.ok()) << kimi.status().ToString();
  EXPECT_EQ(kimi->rows, (std::vector<double>{1, 16, 256, 4096}));
  // (40 + 20) / (10 + 5), (40 + 20) / (20 + 10), (100 + 50) / (100 + 50), (500 + 250) / (1000 +
  // 500)
  EXPECT_EQ(kimi->speed, (std::vector<double>{4, 2, 1, 0.5}));
  EXPECT_NE(kimi->source.find("TEST FIXTURE, not a measurement"), std::string::npos);
  EXPECT_NE(kimi->source.find("shapes Kimi-K2.6 gate_up, Kimi-K2.6 down (this model's experts)"),
            std::string::npos)
      << kimi->source;
  // Qwen3's experts (hidden 4096, intermediate 1536) are none of the fixture's shapes: all three
  // count, the square one adding 3 us to both sides at every m.
  const Result<Int4Speed> qwen =
      Int4SpeedFromTable(Fixture(), LoadedModel("qwen3-235b-a22b"), LoadedGpu("h200-sxm"));
  ASSERT_TRUE(qwen.ok()) << qwen.status().ToString();
  ASSERT_EQ(qwen->speed.size(), 4u);
  EXPECT_DOUBLE_EQ(qwen->speed[0], 63.0 / 18);
  EXPECT_DOUBLE_EQ(qwen->speed[1], 63.0 / 33);
  EXPECT_DOUBLE_EQ(qwen->speed[2], 1);
  EXPECT_DOUBLE_EQ(qwen->speed[3], 753.0 / 1503);
  EXPECT_NE(qwen->source.find("all shapes, none being this model's experts"), std::string::npos);
}

TEST(KernelTableTest, AMeasuredTableSaysWhereAndWhenItWasMeasured) {
  KernelTable table = Fixture();
  table.source = KernelTableSource::kGpuBenchmark;
  table.device = "NVIDIA H200";
  table.date = "2026-12-01T10:22:03Z";
  const Result<Int4Speed> speed =
      Int4SpeedFromTable(table, LoadedModel("kimi-k2.6"), LoadedGpu("h200-sxm"));
  ASSERT_TRUE(speed.ok());
  EXPECT_EQ(
      speed->source.rfind(
          std::string("measured (") + kFixture + ", NVIDIA H200, 2026-12-01T10:22:03Z; shapes ", 0),
      0u)
      << speed->source;
}

TEST(KernelTableTest, ATableForAnotherGpuIsRefused) {
  const Result<Int4Speed> speed =
      Int4SpeedFromTable(Fixture(), LoadedModel("kimi-k2.6"), LoadedGpu("b200"));
  ASSERT_FALSE(speed.ok());
  EXPECT_EQ(speed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(speed.status().message().find(
                std::string(kFixture) +
                ": kernel table for GPU 'h200-sxm' (device 'none: synthetic test fixture'), but "
                "this plan is for GPU 'b200'; a table applies only to the GPU it was measured on"),
            std::string::npos)
      << speed.status().message();
}

TEST(KernelTableTest, ThePlanLooksInMeasuredForTheGpuOnlyWhenNoTableIsNamed) {
  const ModelSpec kimi = LoadedModel("kimi-k2.6");
  const GpuSpec h200 = LoadedGpu("h200-sxm");
  // The shipped configs have no measured/ folder: nothing has been measured on a GPU yet.
  const Result<Int4Speed> by_default = Int4SpeedForPlan("", Configs(), kimi, h200);
  ASSERT_TRUE(by_default.ok());
  EXPECT_FALSE(by_default->measured());
  EXPECT_EQ(by_default->source, "no kernel table at configs/measured/h200-sxm.yaml");
  const Result<Int4Speed> none = Int4SpeedForPlan("none", Configs(), kimi, h200);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->measured());
  EXPECT_EQ(none->source, "--kernel-table none");
  const Result<Int4Speed> named = Int4SpeedForPlan(kFixture, Configs(), kimi, h200);
  ASSERT_TRUE(named.ok());
  EXPECT_TRUE(named->measured());
  EXPECT_EQ(Int4SpeedForPlan("no/such.yaml", Configs(), kimi, h200).status().code(),
            StatusCode::kNotFound);
}

TEST(Int4SpeedTest, InterpolatesInLogRowsAndHoldsTheEnds) {
  Int4Speed s;
  s.rows = {1, 16, 256, 4096};
  s.speed = {4, 2, 1, 0.5};
  s.source = "test";
  for (size_t i = 0; i < s.rows.size(); ++i) {
    EXPECT_DOUBLE_EQ(Int4SpeedAt(s, s.rows[i]), s.speed[i]);
  }
  // 4 rows is half way from 1 to 16 in log m; 64 half way from 16 to 256.
  EXPECT_NEAR(Int4SpeedAt(s, 4), 3, 1e-12);
  EXPECT_NEAR(Int4SpeedAt(s, 64), 1.5, 1e-12);
  EXPECT_NEAR(Int4SpeedAt(s, 2), 4 - 2 * 0.25, 1e-12);
  // Outside the measured m: the nearest end's ratio.
  EXPECT_DOUBLE_EQ(Int4SpeedAt(s, 0.5), 4);
  EXPECT_DOUBLE_EQ(Int4SpeedAt(s, 65536), 0.5);
  EXPECT_EQ(Int4SpeedFormula(s, 4),
            "test: BF16 time / INT4 time at 4 rows per expert, between m 1 (4.000) and m 16 "
            "(2.000), linear in log m");
  EXPECT_EQ(Int4SpeedFormula(s, 0.5),
            "test: BF16 time / INT4 time at 0.5 rows per expert, at or below the smallest "
            "measured m 1: held at its ratio");
  EXPECT_EQ(Int4SpeedFormula(s, 1e5),
            "test: BF16 time / INT4 time at 1e+05 rows per expert, at or above the largest "
            "measured m 4096: held at its ratio");
  // One measured m: that ratio everywhere.
  const Int4Speed one{{64}, {1.25}, "one"};
  EXPECT_DOUBLE_EQ(Int4SpeedAt(one, 1), 1.25);
  EXPECT_DOUBLE_EQ(Int4SpeedAt(one, 1e4), 1.25);
}

}  // namespace
}  // namespace kvsim::model
