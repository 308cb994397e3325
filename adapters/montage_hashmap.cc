// adapters/montage_hashmap.cc — Michael's chained hash table on nbMontage
// (include/ferrite/montage/hash_map.h, the paper's Figure 7) and its broken
// variants, through the nbMontage map adapter (montage_map.h).
//
// Buckets: one per key of the bench's key range (rounded up to a power of
// two; 1024 when unknown), as the paper's 1M buckets for 1M keys. Values:
// --value-size bytes of payload (the 8-byte value first). Keys: 8 bytes, or
// with --key-size 32 the 32-byte Key32::from(key) (ferrite/key32.h), stored
// in the payload and hashed and compared as bytes (bench only). Epochs as in
// montage_queue.cc: 10 ms in benchmarks, only on sync under the simulator.
#include <algorithm>

#include "montage_map.h"
#include "ferrite/montage/hash_map.h"

namespace adapter_montage_hashmap {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fm = ferrite::montage;

struct HashMapTraits {
  template <unsigned F, class S = fm::EpochSys<F>>
  using Map = fm::HashMap<F, std::int64_t, S>;
  template <unsigned F, class S = fm::EpochSys<F>>
  using WideMap = fm::HashMap<F, ferrite::Key32, S>;  // --key-size 32
  static constexpr const char* kName = "montage-hashmap";
  static fm::HashMapOptions options(const fa::Setup& s) {
    fm::HashMapOptions o;
    o.buckets = s.key_range > 0 ? static_cast<std::size_t>(std::min<std::uint64_t>(s.key_range, std::uint64_t{1} << 22))
                                : 1024;
    o.value_bytes = s.value_size;
    return o;
  }
};

const bool registered =
    fa::register_montage_map<HashMapTraits>("Michael's chained hash table on nbMontage (DISC'21 Fig. 7)");

}  // namespace

}  // namespace adapter_montage_hashmap
