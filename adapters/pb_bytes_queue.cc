// adapters/pb_bytes_queue.cc — PBBytesQueue (include/ferrite/combining/
// pb_bytes_queue.h), the PBqueue of byte strings, and its broken variants.
//
// Each workload value v is enqueued as bytes::encode_value(v, setup) — a
// string whose size is drawn from the campaign's `--value-size A..B`
// (default here: 8..512, so campaigns exercise real sizes; a bench run's
// --value-size N other than 8 gives fixed N-byte jobs) — and what dequeue
// and observe read back is decoded with bytes::decode_value: any byte
// mismatch, and any payload that fails validation (the read throws), is
// bytes::kCorrupt, which no workload writes, so the checker reports it.
// Durably linearizable, not detectable (the structure offers no seq API).
#include <optional>
#include <string>
#include <utility>

#include "adapter.h"
#include "bytes_codec.h"
#include "combining.h"
#include "ferrite/combining/pb_bytes_queue.h"

namespace adapter_pb_bytes_queue {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fc = ferrite::combining;
namespace fb = ferrite::adapters::bytes;
namespace bf = ferrite::combining::bytes_fault;
namespace op = ferrite::op;

// The sizes this adapter encodes with (see the file comment; a queue has no
// keys).
fa::Setup with_sizes(const fa::Setup& s) { return fb::with_sizes(s, {8, 8}, {8, 512}); }

template <unsigned BF>
struct PBBytesQueue {
  using Queue = fc::PBBytesQueue<fc::kNoFaults, BF>;
  struct Handle {
    std::unique_ptr<Queue> q;
    fa::Setup setup;  // the sizes the values are encoded with
  };
  static constexpr op::Abstract kAbstract = op::Abstract::kQueue;
  static constexpr bool kDetectable = false;

  static Handle create(ferrite::pmem::Pool* pool, const fa::Setup& s) {
    return {Queue::create(*pool, s.name, s.threads), with_sizes(s)};
  }
  static Handle attach(ferrite::pmem::Pool& pool, const fa::Setup& s) {
    return {Queue::attach(pool, s.name, s.threads), with_sizes(s)};
  }
  static op::Response apply(Handle& h, int tid, std::uint64_t, const op::Op& o) {
    switch (o.kind) {
      case op::kEnqueue: h.q->enqueue(tid, fb::encode_value(o.arg, h.setup)); return op::Response::ack();
      case op::kDequeue: {
        std::optional<std::string> b;
        try {
          b = h.q->dequeue(tid);
        } catch (const ferrite::pmem::PoolError&) {
          return op::Response::of(fb::kCorrupt);  // a payload that fails validation
        }
        if (!b) return op::Response::none();
        return op::Response::of(fb::decode_value(*b, h.setup));
      }
      default: fa::unsupported("pb-bytes-queue", o);
    }
  }
  // Reads only: the offsets front -> back, each payload validated and
  // decoded (kCorrupt for a damaged one, or a list that breaks).
  static std::vector<std::int64_t> observe(Handle& h) {
    std::vector<std::int64_t> out;
    std::vector<std::uint64_t> offs;
    try {
      offs = h.q->payload_offsets();
    } catch (const ferrite::pmem::PoolError&) {
      return {fb::kCorrupt};
    }
    for (std::uint64_t off : offs) {
      try {
        out.push_back(fb::decode_value(ferrite::pmem::read_payload(*h.q->pool(), off), h.setup));
      } catch (const ferrite::pmem::PoolError&) {
        out.push_back(fb::kCorrupt);
      }
    }
    return out;
  }
  static double combining_degree(const Handle& h) { return h.q->combining_degree(); }
};

}  // namespace

// Campaign pools of at least 4 MiB: each thread's arena takes a 64 KiB chunk
// per payload size class, and 8..512-byte values span 8 classes (a 1 MiB
// pool has 15 chunks: 3 threads run out).
fa::Registration campaign_pool(fa::Registration r) {
  r.crash_pool_size = std::size_t{4} << 20;
  return r;
}

FERRITE_REGISTER_ADAPTER(PBBytesQueue<bf::kNone>,
                         campaign_pool(fa::ferrite_technique("pb-bytes-queue", "pbcomb",
                                               "PBqueue of byte strings: payload offsets as values, payload psync "
                                               "before publication, reclamation after the dequeuer's next dequeue")));
FERRITE_REGISTER_ADAPTER(PBBytesQueue<bf::kNoPayloadPsync>,
                         campaign_pool(fa::ferrite_broken("pb-bytes-queue", "pbcomb", "no-payload-psync",
                                            "the payload's offset is announced without the psync after "
                                            "write_payload (payload.h P1)")));
FERRITE_REGISTER_ADAPTER(PBBytesQueue<bf::kFreeAtReturn>,
                         campaign_pool(fa::ferrite_broken("pb-bytes-queue", "pbcomb", "free-at-return",
                                            "a dequeued payload is freed when the dequeue returns, while the "
                                            "durable response still names it")));

}  // namespace adapter_pb_bytes_queue
