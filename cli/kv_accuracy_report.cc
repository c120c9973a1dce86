// Text and JSON forms of the KV cache accuracy study.
#include "cli/kv_accuracy_report.h"

#include <fmt/format.h>

#include <memory>
#include <string>

#include "base/seed.h"
#include "cli/text_table.h"
#include "kernels/backend.h"

namespace kvsim::cli {

std::string DescribeKvAccuracyConfig(const KvAccuracyConfig& config) {
  const std::string shape =
      config.kind == AttentionKind::kMla
          ? fmt::format("MLA: latent 576 (512 + 64 rope), {} query heads", config.num_q_heads)
          : fmt::format("GQA: {} KV heads x {}, {} query heads", config.num_kv_heads,
                        config.head_dim, config.num_q_heads);
  return fmt::format("{}; {} requests x {} tokens, page size {}", shape, config.requests,
                     config.tokens, config.page_size);
}

void PrintKvAccuracyTable(std::ostream& out, const std::vector<KvAccuracyRow>& rows) {
  using Align = TextTable::Align;
  TextTable table({"distribution", "|K| max", "format", "scale", "rel rms", "max abs err", "cosine",
                   "top-1", "saturated"},
                  {Align::kLeft, Align::kRight, Align::kLeft, Align::kLeft, Align::kRight,
                   Align::kRight, Align::kRight, Align::kRight, Align::kRight});
  for (const KvAccuracyRow& row : rows) {
    table.AddRow({row.distribution, fmt::format("{:.4g}", row.k_absmax), row.format, row.scale,
                  fmt::format("{:.3e}", row.error.relative_rms()),
                  fmt::format("{:.3e}", row.error.max_abs_error()),
                  fmt::format("{:.6f}", row.error.cosine_similarity()),
                  fmt::format("{:.1f}%", 100.0 * row.top1_agreement),
                  fmt::format("{:.3f}%", 100.0 * static_cast<double>(row.saturated) /
                                             static_cast<double>(row.stored_values))});
  }
  table.Print(out);
}

Status PrintKvAccuracyDemo(std::ostream& out, uint64_t seed) {
  KvAccuracyConfig config;
  config.requests = 2;
  config.tokens = 256;
  config.e4m3_only = true;
  config.seed = seed;
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  KVSIM_ASSIGN_OR_RETURN(const std::vector<KvAccuracyRow> rows,
                         MeasureKvAccuracy(*backend, config));
  out << "FP8 e4m3 KV cache against BF16 through the append and decode attention kernels (CPU "
         "backend),\n"
      << DescribeKvAccuracyConfig(config)
      << ". Scale 1.0 is the uncalibrated default; 'inverse' a\nscale/descale mix-up. The full "
         "study: kvsim accuracy kv.\n\n";
  PrintKvAccuracyTable(out, rows);
  return Status::Ok();
}

nlohmann::json KvAccuracyJson(const KvAccuracyConfig& config,
                              const std::vector<KvAccuracyRow>& rows) {
  nlohmann::json study;
  study["kind"] = config.kind == AttentionKind::kMla ? "mla" : "gqa";
  study["shape"] = DescribeKvAccuracyConfig(config);
  study["seed"] = FormatSeed(config.seed);
  study["kernel_path"] = KernelPathName(config.path);
  study["mla_products"] = FastMlaMathName(config.mla_products);
  study["rows"] = nlohmann::json::array();
  for (const KvAccuracyRow& row : rows) {
    study["rows"].push_back({{"distribution", row.distribution},
                             {"k_absmax", row.k_absmax},
                             {"format", row.format},
                             {"scale", row.scale},
                             {"relative_rms", row.error.relative_rms()},
                             {"max_abs_error", row.error.max_abs_error()},
                             {"cosine_similarity", row.error.cosine_similarity()},
                             {"top1_agreement", row.top1_agreement},
                             {"saturated_values", row.saturated},
                             {"stored_values", row.stored_values},
                             {"nonfinite_outputs", row.error.nonfinite_count()}});
  }
  return study;
}

}  // namespace kvsim::cli
