// The KV-cache formats' names and their order.
#include "base/kv_format.h"

#include <array>

namespace kvsim {
namespace {

struct NamedFormat {
  std::string_view name;
  KvFormat format;
};

// Names keep the spellings `kvsim plan` users already type ("fp8_e4m3" is e4m3 per tensor,
// "fp8_mla_tiles" FlashMLA's blocks) and name the others in the same style.
constexpr std::array<NamedFormat, 6> kNamedFormats = {{
    {"bf16", {KvDtype::kBf16, KvScaling::kNone}},
    {"fp8_e4m3", {KvDtype::kFp8E4M3, KvScaling::kPerTensor}},
    {"fp8_e5m2", {KvDtype::kFp8E5M2, KvScaling::kPerTensor}},
    {"fp8_e4m3_per_token_head", {KvDtype::kFp8E4M3, KvScaling::kPerTokenHead}},
    {"fp8_e5m2_per_token_head", {KvDtype::kFp8E5M2, KvScaling::kPerTokenHead}},
    {"fp8_mla_tiles", {KvDtype::kFp8E4M3, KvScaling::kMlaBlock128}},
}};

// The table names exactly the pairs IsKvFormat accepts: each entry is valid, and there are as
// many entries as valid pairs.
constexpr bool EveryNamedFormatIsValid() {
  for (const NamedFormat& named : kNamedFormats) {
    if (!IsKvFormat(named.format)) return false;
  }
  return true;
}
constexpr size_t ValidPairCount() {
  size_t count = 0;
  for (KvDtype dtype : {KvDtype::kBf16, KvDtype::kFp8E4M3, KvDtype::kFp8E5M2}) {
    for (KvScaling scaling : {KvScaling::kNone, KvScaling::kPerTensor, KvScaling::kPerTokenHead,
                              KvScaling::kMlaBlock128}) {
      if (IsKvFormat({dtype, scaling})) ++count;
    }
  }
  return count;
}
static_assert(EveryNamedFormatIsValid(), "a named format is not a valid pair");
static_assert(ValidPairCount() == kNamedFormats.size(), "a valid pair has no name");

}  // namespace

std::vector<KvFormat> AllKvFormats() {
  std::vector<KvFormat> formats;
  for (const NamedFormat& named : kNamedFormats) formats.push_back(named.format);
  return formats;
}

std::string KvFormatName(KvFormat format) {
  for (const NamedFormat& named : kNamedFormats) {
    if (named.format == format) return std::string(named.name);
  }
  KVSIM_CHECK(false) << "not a KV format: dtype " << static_cast<int>(format.dtype) << ", scaling "
                     << static_cast<int>(format.scaling);
  return "";
}

std::string KvFormatNameList() {
  std::string names;
  for (const NamedFormat& named : kNamedFormats) {
    if (!names.empty()) names += ", ";
    names += named.name;
  }
  return names;
}

Result<KvFormat> ParseKvFormat(std::string_view text) {
  for (const NamedFormat& named : kNamedFormats) {
    if (text == named.name) return named.format;
  }
  return InvalidArgumentError("KV cache format '" + std::string(text) +
                              "' is not known; allowed: " + KvFormatNameList());
}

}  // namespace kvsim
