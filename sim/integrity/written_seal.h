// WrittenSeal: the written-state layer beside the tag check. Page tags prove that a page is still
// the allocation a request was granted; they say nothing about which of its slots that allocation
// has written. A read of slots nobody wrote (a prefix published before its KV landed, a length
// mask past the tokens, a committed length ahead of the writes) passes every tag. The seal keeps,
// per physical page, which slots the current allocation wrote, and fails a read that reaches past
// the page's written prefix: the S class of docs/faults.md.
//
// A page's allocation is named by its tag: a write under a tag other than the one the seal holds
// starts the page afresh, and a read under another tag finds nothing written. The seal is as
// strong as the tags it keys on (a narrow tag that repeats lets an old allocation's writes count).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "sim/memory/page_pool.h"

namespace kvsim {

// A read the seal refuses: the first page whose written prefix is shorter than what was read.
struct SealBreach {
  int32_t logical_page = -1;  // -1: the read is covered
  int32_t page = -1;
  int32_t written = 0;  // slots written, from slot 0, in the page's current allocation
  int32_t read = 0;     // slots the read covers there

  bool breached() const { return logical_page >= 0; }
  // "logical page 3 (physical page 17): 5 slots written, 8 read".
  std::string Describe() const;
};

class WrittenSeal {
 public:
  // A seal for `num_pages` pages of `page_size` slots; OutOfRange outside 1..kMaxPoolPages pages,
  // 1..65536 slots per page, or more than 2^28 slots in all.
  static Result<WrittenSeal> Create(int32_t num_pages, int32_t page_size);

  // A kernel wrote `slot` of `page`, which carries `tag` now. Out-of-range pages are ignored (the
  // write landed nowhere the seal keeps).
  void OnWrite(int32_t page, int32_t slot, uint64_t tag);
  // How many leading slots of `page` its allocation carrying `tag` has written.
  int32_t Written(int32_t page, uint64_t tag) const;
  // Checks a read of positions [0, end) through the block-table row `entries` (`count` of them)
  // against the pages' current tags in `pool`. Entries outside the pool are the tag check's to
  // refuse and are passed over here.
  SealBreach CheckRead(const int32_t* entries, int32_t count, int32_t end,
                       const PagePool& pool) const;

  int32_t page_size() const { return page_size_; }

 private:
  WrittenSeal(int32_t num_pages, int32_t page_size);

  int32_t num_pages_;
  int32_t page_size_;
  std::vector<uint64_t> tags_;      // [num_pages]: the allocation the page's record belongs to
  std::vector<int32_t> written_;    // [num_pages]: its written prefix
  std::vector<uint8_t> slot_bits_;  // [num_pages * page_size]: slots written past a gap, too
};

}  // namespace kvsim
