// Reading Vidur-format operator profiles with the error standards of every kvsim input.
#include "model/operator_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <system_error>
#include <utility>

#include "base/input_file.h"

namespace kvsim::model {
namespace {

namespace fs = std::filesystem;

// Vidur's largest profile is 1.2 MB; a profile of a hundred times as many rows is still read.
constexpr size_t kMaxProfileBytes = size_t{128} << 20;
constexpr int64_t kMaxTokens = int64_t{1} << 24;
constexpr int kMaxTp = 1024;
constexpr int64_t kMaxFiles = 4096;
// Measured times are milliseconds; anything from a picosecond to an hour is read.
constexpr double kMinMs = 1e-9;
constexpr double kMaxMs = 3.6e6;

constexpr std::array<const char*, kProfiledOpCount> kColumns = {
    "attn_pre_proj", "attn_post_proj",  "mlp_up_proj",
    "mlp_down_proj", "input_layernorm", "post_attention_layernorm",
    "attn_rope",     "mlp_act",         "add"};

uint64_t Fnv1a(uint64_t hash, const std::string& text) {
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

// One CSV file's text split into lines and comma-separated fields (Vidur writes no quoting).
class CsvFile {
 public:
  CsvFile(std::string path, std::string text) : path_(std::move(path)), text_(std::move(text)) {}

  // The next line's fields; false at the end. Empty lines (the file's last newline) are skipped.
  bool Next(std::vector<std::string>& fields) {
    while (pos_ < text_.size()) {
      size_t end = text_.find('\n', pos_);
      if (end == std::string::npos) end = text_.size();
      std::string line = text_.substr(pos_, end - pos_);
      pos_ = end + 1;
      ++line_;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty()) continue;
      fields.clear();
      size_t start = 0;
      while (true) {
        const size_t comma = line.find(',', start);
        fields.push_back(
            line.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
      return true;
    }
    return false;
  }

  int line() const { return line_; }
  const std::string& path() const { return path_; }

  Status Error(const std::string& column, const std::string& message) const {
    return InvalidArgumentError(
        fmt::format("{}:{}: column '{}': {}", path_, line_, column, message));
  }

 private:
  std::string path_;
  std::string text_;
  size_t pos_ = 0;
  int line_ = 0;
};

// The header's columns by name, and how many fields it has (an empty name, as Vidur's index
// column has, may repeat, so the names alone do not count the fields).
struct Header {
  std::map<std::string, size_t> index;
  size_t width = 0;

  // The field of a row under the column `name`, which HeaderColumns made sure is there.
  const std::string& At(const std::vector<std::string>& row, const char* name) const {
    return row[index.at(name)];
  }
};

// Reads the header line; every one of `required` must be there, once.
Result<Header> HeaderColumns(CsvFile& csv, const std::vector<std::string>& required) {
  std::vector<std::string> header;
  if (!csv.Next(header)) {
    return InvalidArgumentError(
        fmt::format("{}: empty; a Vidur profile starts with a header "
                    "line of column names",
                    csv.path()));
  }
  Header out;
  out.width = header.size();
  std::map<std::string, size_t>& index = out.index;
  for (size_t i = 0; i < header.size(); ++i) {
    if (!index.emplace(header[i], i).second && !header[i].empty()) {
      return csv.Error(header[i], "named twice in the header");
    }
  }
  for (const std::string& name : required) {
    if (index.count(name) == 0) {
      return csv.Error(name, "missing from the header; a Vidur profile has it");
    }
  }
  return out;
}

// The next data row into `fields`, checked to have the header's width; false at the end.
Result<bool> NextRow(CsvFile& csv, const Header& header, std::vector<std::string>& fields) {
  if (!csv.Next(fields)) return false;
  if (fields.size() != header.width) {
    return InvalidArgumentError(fmt::format("{}:{}: {} fields; the header has {}", csv.path(),
                                            csv.line(), fields.size(), header.width));
  }
  return true;
}

Result<int64_t> Integer(const CsvFile& csv, const std::string& column, const std::string& text,
                        int64_t min, int64_t max) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < min || value > max) {
    return csv.Error(column,
                     fmt::format("'{}' is not allowed; an integer {} to {}", text, min, max));
  }
  return value;
}

// A time in milliseconds, returned in seconds; empty is 0 when `empty_ok`.
Result<double> Milliseconds(const CsvFile& csv, const std::string& column, const std::string& text,
                            bool empty_ok) {
  if (text.empty() && empty_ok) return 0.0;
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(value) || value < kMinMs ||
      value > kMaxMs) {
    return csv.Error(column,
                     fmt::format("'{}' is not allowed; a time in milliseconds, {:g} to {:g}", text,
                                 kMinMs, kMaxMs));
  }
  return value * 1e-3;
}

Result<std::string> ReadProfile(const std::string& path) {
  return ReadInputFile(path, kMaxProfileBytes, "operator profile", "operator profile", "128 MiB");
}

std::string Hex(uint64_t v) { return fmt::format("{:016x}", v); }

}  // namespace

const char* ProfiledOpColumn(ProfiledOp op) { return kColumns[static_cast<size_t>(op)]; }

bool IsProfiledGemm(ProfiledOp op) {
  return op == ProfiledOp::kAttnPreProj || op == ProfiledOp::kAttnPostProj ||
         op == ProfiledOp::kMlpUpProj || op == ProfiledOp::kMlpDownProj;
}

std::string ProfileGpuName(const std::string& folder_gpu) {
  if (folder_gpu == "h100") return "h100-sxm";
  if (folder_gpu == "a100") return "a100-sxm-80gb";
  return folder_gpu;
}

Result<ComputeProfile> ParseComputeProfile(const std::string& path, std::string text,
                                           const std::string& gpu, const std::string& model) {
  CsvFile csv(path, std::move(text));
  std::vector<std::string> required = {"n_head",
                                       "n_kv_head",
                                       "n_embd",
                                       "n_expanded_embd",
                                       "use_gated_mlp",
                                       "num_tokens",
                                       "num_tensor_parallel_workers"};
  // The GEMMs every layer has; the other operators' columns may be missing (phi-2's profile has
  // no post-attention norm), read as not measured.
  for (int i = 0; i < kProfiledOpCount; ++i) {
    if (IsProfiledGemm(static_cast<ProfiledOp>(i))) {
      required.push_back(fmt::format("time_stats.{}.median", kColumns[static_cast<size_t>(i)]));
    }
  }
  KVSIM_ASSIGN_OR_RETURN(const Header header, HeaderColumns(csv, required));
  ComputeProfile profile{path, gpu, model, {}};
  std::vector<std::string> f;
  while (true) {
    KVSIM_ASSIGN_OR_RETURN(const bool more, NextRow(csv, header, f));
    if (!more) break;
    const auto at = [&](const char* name) -> const std::string& { return header.At(f, name); };
    ComputeProfileRow row;
    row.line = csv.line();
    KVSIM_ASSIGN_OR_RETURN(const int64_t heads, Integer(csv, "n_head", at("n_head"), 1, 4096));
    KVSIM_ASSIGN_OR_RETURN(const int64_t kv_heads,
                           Integer(csv, "n_kv_head", at("n_kv_head"), 1, heads));
    KVSIM_ASSIGN_OR_RETURN(const int64_t hidden,
                           Integer(csv, "n_embd", at("n_embd"), 1, int64_t{1} << 20));
    KVSIM_ASSIGN_OR_RETURN(
        const int64_t inter,
        Integer(csv, "n_expanded_embd", at("n_expanded_embd"), 1, int64_t{1} << 22));
    KVSIM_ASSIGN_OR_RETURN(row.tokens, Integer(csv, "num_tokens", at("num_tokens"), 1, kMaxTokens));
    KVSIM_ASSIGN_OR_RETURN(const int64_t tp, Integer(csv, "num_tensor_parallel_workers",
                                                     at("num_tensor_parallel_workers"), 1, kMaxTp));
    const std::string& gated = at("use_gated_mlp");
    if (gated != "True" && gated != "False") {
      return csv.Error("use_gated_mlp", fmt::format("'{}' is not allowed; True or False", gated));
    }
    if (hidden % heads != 0) {
      return csv.Error("n_embd", fmt::format("{} is not a multiple of n_head {}", hidden, heads));
    }
    if (heads % kv_heads != 0) {
      return csv.Error("n_kv_head", fmt::format("{} does not divide n_head {}", kv_heads, heads));
    }
    if (kv_heads % tp != 0 || inter % tp != 0) {
      return csv.Error("num_tensor_parallel_workers",
                       fmt::format("{} does not divide n_kv_head {} and n_expanded_embd {}; "
                                   "Vidur shards both over it",
                                   tp, kv_heads, inter));
    }
    row.heads = static_cast<int>(heads);
    row.kv_heads = static_cast<int>(kv_heads);
    row.hidden = static_cast<int>(hidden);
    row.intermediate = static_cast<int>(inter);
    row.tp = static_cast<int>(tp);
    row.gated = gated == "True";
    for (int i = 0; i < kProfiledOpCount; ++i) {
      const std::string column =
          fmt::format("time_stats.{}.median", kColumns[static_cast<size_t>(i)]);
      if (header.index.count(column) == 0) continue;
      KVSIM_ASSIGN_OR_RETURN(row.median_s[static_cast<size_t>(i)],
                             Milliseconds(csv, column, at(column.c_str()), true));
    }
    profile.rows.push_back(row);
  }
  if (profile.rows.empty()) {
    return InvalidArgumentError(fmt::format("{}: no rows after the header", path));
  }
  return profile;
}

Result<AllReduceProfile> ParseAllReduceProfile(const std::string& path, std::string text,
                                               const std::string& gpu) {
  CsvFile csv(path, std::move(text));
  KVSIM_ASSIGN_OR_RETURN(const Header header,
                         HeaderColumns(csv, {"time_stats.all_reduce.median", "num_workers", "size",
                                             "collective", "devices_per_node"}));
  AllReduceProfile profile{path, gpu, {}};
  std::vector<std::string> f;
  while (true) {
    KVSIM_ASSIGN_OR_RETURN(const bool more, NextRow(csv, header, f));
    if (!more) break;
    const auto at = [&](const char* name) -> const std::string& { return header.At(f, name); };
    AllReduceRow row;
    row.line = csv.line();
    KVSIM_ASSIGN_OR_RETURN(const int64_t gpus,
                           Integer(csv, "num_workers", at("num_workers"), 1, kMaxTp));
    KVSIM_ASSIGN_OR_RETURN(const int64_t per_node,
                           Integer(csv, "devices_per_node", at("devices_per_node"), 1, kMaxTp));
    // Vidur writes the message size in bytes (the profiler's element count times 2 for FP16).
    KVSIM_ASSIGN_OR_RETURN(row.bytes, Integer(csv, "size", at("size"), 1, int64_t{1} << 40));
    KVSIM_ASSIGN_OR_RETURN(row.median_s, Milliseconds(csv, "time_stats.all_reduce.median",
                                                      at("time_stats.all_reduce.median"), false));
    if (at("collective") != "all_reduce" || per_node != gpus || gpus < 2) continue;
    row.gpus = static_cast<int>(gpus);
    profile.rows.push_back(row);
  }
  if (profile.rows.empty()) {
    return InvalidArgumentError(fmt::format(
        "{}: no all-reduce among 2 or more GPUs of one node (devices_per_node == num_workers)",
        path));
  }
  return profile;
}

Result<ComputeProfile> LoadComputeProfile(const std::string& path, const std::string& gpu,
                                          const std::string& model) {
  KVSIM_ASSIGN_OR_RETURN(std::string text, ReadProfile(path));
  return ParseComputeProfile(path, std::move(text), gpu, model);
}

Result<AllReduceProfile> LoadAllReduceProfile(const std::string& path, const std::string& gpu) {
  KVSIM_ASSIGN_OR_RETURN(std::string text, ReadProfile(path));
  return ParseAllReduceProfile(path, std::move(text), gpu);
}

Result<OperatorProfiles> LoadOperatorProfiles(const std::string& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    return NotFoundError(fmt::format("{}: not a folder of operator profiles", root));
  }
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(root, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it.depth() > 8) {
      it.disable_recursion_pending();
      continue;
    }
    const std::string name = it->path().filename().string();
    if (name == "mlp.csv" || name == "all_reduce.csv") files.push_back(it->path());
    if (static_cast<int64_t>(files.size()) > kMaxFiles) {
      return InvalidArgumentError(fmt::format("{}: more than {} profile files", root, kMaxFiles));
    }
  }
  if (ec) return InvalidArgumentError(fmt::format("{}: {}", root, ec.message()));
  std::sort(files.begin(), files.end());
  OperatorProfiles out;
  out.root = root;
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (const fs::path& file : files) {
    const fs::path rel = file.lexically_relative(root);
    std::vector<std::string> parts;
    for (const auto& p : rel) parts.push_back(p.string());
    const std::string path = file.string();
    KVSIM_ASSIGN_OR_RETURN(std::string text, ReadProfile(path));
    hash = Fnv1a(Fnv1a(hash, rel.generic_string()), text);
    if (parts.size() >= 4 && parts[0] == "compute" && parts.back() == "mlp.csv") {
      KVSIM_ASSIGN_OR_RETURN(ComputeProfile p,
                             ParseComputeProfile(path, std::move(text), ProfileGpuName(parts[1]),
                                                 parts[parts.size() - 2]));
      out.compute.push_back(std::move(p));
    } else if (parts.size() == 3 && parts[0] == "network" && parts[2] == "all_reduce.csv") {
      const std::string folder = parts[1];
      const std::string gpu = folder.substr(0, folder.find('_'));
      KVSIM_ASSIGN_OR_RETURN(AllReduceProfile p,
                             ParseAllReduceProfile(path, std::move(text), ProfileGpuName(gpu)));
      out.all_reduce.push_back(std::move(p));
    } else {
      return InvalidArgumentError(fmt::format(
          "{}: not where a profile belongs; Vidur's layout is compute/GPU/ORG/MODEL/mlp.csv "
          "and network/GPU_TOPOLOGY/all_reduce.csv",
          path));
    }
    ++out.files;
  }
  if (out.files == 0) {
    return NotFoundError(fmt::format(
        "{}: no mlp.csv or all_reduce.csv; Vidur's layout is compute/GPU/ORG/MODEL/mlp.csv and "
        "network/GPU_TOPOLOGY/all_reduce.csv",
        root));
  }
  out.content_hash = Hex(hash);
  return out;
}

}  // namespace kvsim::model
