// adapters/montage_skiplist.cc — the Herlihy–Shavit lock-free skip list on
// nbMontage (include/ferrite/montage/skiplist.h) and its broken variants,
// through the nbMontage map adapter (montage_map.h).
//
// Values: --value-size bytes of payload (the 8-byte value first). Keys: 8
// bytes, or with --key-size 32 the 32-byte Key32::from(key)
// (ferrite/key32.h), stored in the payload and the tower and compared as
// bytes (bench only). Epochs as in montage_queue.cc: 10 ms in benchmarks,
// only on sync under the simulator.
#include "montage_map.h"
#include "ferrite/montage/skiplist.h"

namespace adapter_montage_skiplist {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fm = ferrite::montage;

struct SkipListTraits {
  template <unsigned F, class S = fm::EpochSys<F>>
  using Map = fm::SkipList<F, std::int64_t, S>;
  template <unsigned F, class S = fm::EpochSys<F>>
  using WideMap = fm::SkipList<F, ferrite::Key32, S>;  // --key-size 32
  static constexpr const char* kName = "montage-skiplist";
  static fm::SkipListOptions options(const fa::Setup& s) {
    fm::SkipListOptions o;
    o.value_bytes = s.value_size;
    return o;
  }
};

const bool registered = fa::register_montage_map<SkipListTraits>(
    "Herlihy-Shavit lock-free skip list on nbMontage (logical deletion in the value word; DISC'21 §5)");

}  // namespace

}  // namespace adapter_montage_skiplist
