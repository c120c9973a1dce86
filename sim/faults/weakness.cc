// Weakness names.
#include "sim/faults/weakness.h"

namespace kvsim::sim {

const char* WeaknessName(Weakness weakness) {
  switch (weakness) {
    case Weakness::kNone:
      return "none";
    case Weakness::kRefuseAfterFault:
      return "refuse-after-fault";
    case Weakness::kSkipWriteCheck:
      return "skip-write-check";
    case Weakness::kSealOneSlotShort:
      return "seal-one-slot-short";
    case Weakness::kTableAfterCheck:
      return "table-after-check";
    case Weakness::kBooksFollowTags:
      return "books-follow-tags";
    case Weakness::kStoreCheckedAtStart:
      return "store-checked-at-start";
  }
  return "unknown";
}

Result<Weakness> ParseWeakness(const std::string& name) {
  std::string names;
  for (int i = 0; i < kWeaknesses; ++i) {
    const Weakness weakness = static_cast<Weakness>(i);
    if (name == WeaknessName(weakness)) return weakness;
    names += (names.empty() ? "" : ", ") + std::string(WeaknessName(weakness));
  }
  return InvalidArgumentError("unknown weakness '" + name + "'; allowed: " + names);
}

}  // namespace kvsim::sim
