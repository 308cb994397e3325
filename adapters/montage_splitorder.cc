// adapters/montage_splitorder.cc — the Shalev–Shavit split-ordered
// resizable hash table on nbMontage (include/ferrite/montage/split_ordered.h)
// and its broken variants, through the nbMontage map adapter (montage_map.h).
//
// Buckets: the table starts with 2 and doubles past one key per bucket
// (max_load 1), so a benchmark's prefill and the crash workload's 4 keys
// both resize it (the campaigns see lazily initialized buckets). Values:
// --value-size bytes of payload (the 8-byte value first). Keys: 8 bytes, or
// with --key-size 32 the 32-byte Key32::from(key) (ferrite/key32.h), stored
// in the payload and the node, hashed and compared as bytes (bench only).
// Epochs as in montage_queue.cc: 10 ms in benchmarks, only on sync under the
// simulator.
#include "montage_map.h"
#include "ferrite/montage/split_ordered.h"

namespace adapter_montage_splitorder {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fm = ferrite::montage;

struct SplitOrderedTraits {
  template <unsigned F, class S = fm::EpochSys<F>>
  using Map = fm::SplitOrderedMap<F, std::int64_t, S>;
  template <unsigned F, class S = fm::EpochSys<F>>
  using WideMap = fm::SplitOrderedMap<F, ferrite::Key32, S>;  // --key-size 32
  static constexpr const char* kName = "montage-splitorder";
  static fm::SplitOrderedOptions options(const fa::Setup& s) {
    fm::SplitOrderedOptions o;
    o.initial_buckets = 2;
    o.max_load = 1;
    o.value_bytes = s.value_size;
    return o;
  }
};

const bool registered = fa::register_montage_map<SplitOrderedTraits>(
    "Shalev-Shavit split-ordered resizable hash table on nbMontage (JACM'06; DISC'21 §5)");

}  // namespace

}  // namespace adapter_montage_splitorder
