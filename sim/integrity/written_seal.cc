// The written-state seal.
#include "sim/integrity/written_seal.h"

#include <algorithm>

namespace kvsim {

namespace {
constexpr int32_t kMaxSealPageSize = 1 << 16;
constexpr int64_t kMaxSealSlots = int64_t{1} << 28;
}  // namespace

std::string SealBreach::Describe() const {
  return "logical page " + std::to_string(logical_page) + " (physical page " +
         std::to_string(page) + "): " + std::to_string(written) + " slots written, " +
         std::to_string(read) + " read";
}

Result<WrittenSeal> WrittenSeal::Create(int32_t num_pages, int32_t page_size) {
  if (num_pages < 1 || num_pages > kMaxPoolPages || page_size < 1 || page_size > kMaxSealPageSize ||
      static_cast<int64_t>(num_pages) * page_size > kMaxSealSlots) {
    return OutOfRangeError("written seal: " + std::to_string(num_pages) + " pages of " +
                           std::to_string(page_size) +
                           " slots; at most 2^28 slots, pages of 1 to 65536");
  }
  return WrittenSeal(num_pages, page_size);
}

WrittenSeal::WrittenSeal(int32_t num_pages, int32_t page_size)
    : num_pages_(num_pages),
      page_size_(page_size),
      // Tag 0 with nothing written: a page never allocated.
      tags_(static_cast<size_t>(num_pages), 0),
      written_(static_cast<size_t>(num_pages), 0),
      slot_bits_(static_cast<size_t>(num_pages) * static_cast<size_t>(page_size), 0) {}

void WrittenSeal::OnWrite(int32_t page, int32_t slot, uint64_t tag) {
  if (page < 0 || page >= num_pages_ || slot < 0 || slot >= page_size_) return;
  const size_t index = static_cast<size_t>(page);
  uint8_t* bits = &slot_bits_[index * static_cast<size_t>(page_size_)];
  if (tags_[index] != tag) {
    // A new allocation: what the old one wrote is not its own.
    tags_[index] = tag;
    written_[index] = 0;
    std::fill(bits, bits + page_size_, 0);
  }
  bits[slot] = 1;
  int32_t& written = written_[index];
  while (written < page_size_ && bits[written] != 0) ++written;
}

int32_t WrittenSeal::Written(int32_t page, uint64_t tag) const {
  if (page < 0 || page >= num_pages_) return 0;
  const size_t index = static_cast<size_t>(page);
  return tags_[index] == tag ? written_[index] : 0;
}

SealBreach WrittenSeal::CheckRead(const int32_t* entries, int32_t count, int32_t end,
                                  const PagePool& pool) const {
  SealBreach breach;
  const int32_t pages = (end + page_size_ - 1) / page_size_;
  for (int32_t logical = 0; logical < pages; ++logical) {
    if (logical >= count) break;
    const int32_t page = entries[logical];
    if (page < 0 || page >= num_pages_ || page >= pool.num_pages()) continue;
    const int32_t read = std::min(page_size_, end - logical * page_size_);
    const int32_t written = Written(page, pool.tag(page));
    if (written >= read) continue;
    breach.logical_page = logical;
    breach.page = page;
    breach.written = written;
    breach.read = read;
    return breach;
  }
  return breach;
}

}  // namespace kvsim
