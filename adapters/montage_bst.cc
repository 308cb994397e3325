// adapters/montage_bst.cc — the Natarajan–Mittal lock-free BST on nbMontage
// (include/ferrite/montage/bst.h) and its broken variants, through the
// nbMontage map adapter (montage_map.h).
//
// Values: --value-size bytes of payload (the 8-byte value first). Keys: 8
// bytes, or with --key-size 32 the 32-byte Key32::from(key)
// (ferrite/key32.h), stored in the payload and the nodes and compared as
// bytes (bench only). Epochs as in montage_queue.cc: 10 ms in benchmarks,
// only on sync under the simulator.
#include "montage_map.h"
#include "ferrite/montage/bst.h"

namespace adapter_montage_bst {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fm = ferrite::montage;

struct BstTraits {
  template <unsigned F, class S = fm::EpochSys<F>>
  using Map = fm::Bst<F, std::int64_t, S>;
  template <unsigned F, class S = fm::EpochSys<F>>
  using WideMap = fm::Bst<F, ferrite::Key32, S>;  // --key-size 32
  static constexpr const char* kName = "montage-bst";
  static fm::BstOptions options(const fa::Setup& s) {
    fm::BstOptions o;
    o.value_bytes = s.value_size;
    return o;
  }
};

const bool registered =
    fa::register_montage_map<BstTraits>("Natarajan-Mittal lock-free external BST on nbMontage (DISC'21 §5; PPoPP'14)");

}  // namespace

}  // namespace adapter_montage_bst
