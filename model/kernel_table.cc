// Writing the kernel table as YAML.
#include "model/kernel_table.h"

#include <fmt/format.h>

namespace kvsim::model {
namespace {

// A YAML double-quoted scalar: backslash and quote escaped, control characters as \xXX, so that
// the text reads back as it was (dropping them, the writer once turned a name of control
// characters into an empty one, which the reader refuses: found by //fuzz:config_fuzz).
std::string Quote(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20 || byte == 0x7F) {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

const char* KernelTableSourceName(KernelTableSource source) {
  return source == KernelTableSource::kTestFixture ? "test_fixture" : "gpu_benchmark";
}

std::string FormatKernelTable(const KernelTable& table) {
  std::string out = fmt::format(
      "# GEMM times per weight shape and row count: INT4 W4A16 (group 32, symmetric, bf16\n"
      "# scales), FP8 e4m3 (128x128 fp32 block scales) and cuBLAS BF16, in microseconds per call.\n"
      "# speedup = baseline time / INT4 time. Format: docs/kernels.md, \"The kernel table\".\n"
      "kind: {}\nversion: {}\nsource: {}\ngpu: {}\ndevice: {}\ndate: {}\nshapes:\n",
      kKernelTableKind, kKernelTableVersion, KernelTableSourceName(table.source), Quote(table.gpu),
      Quote(table.device), Quote(table.date));
  for (const KernelTableShape& shape : table.shapes) {
    out += fmt::format("  - name: {}\n    k: {}\n    n: {}\n    rows:\n", Quote(shape.name),
                       shape.k, shape.n);
    for (const KernelTableRow& row : shape.rows) {
      out += fmt::format(
          "      - {{m: {}, int4_us: {:.6g}, fp8_us: {:.6g}, bf16_us: {:.6g}, "
          "int4_speedup_over_bf16: {:.6g}, int4_speedup_over_fp8: {:.6g}}}\n",
          row.m, row.int4_us, row.fp8_us, row.bf16_us, row.Int4SpeedupOverBf16(),
          row.Int4SpeedupOverFp8());
    }
  }
  return out;
}

}  // namespace kvsim::model
